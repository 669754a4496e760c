// A wallet buyer's tenant: made on its first purchase from [sales.buyer] (scopes, budget windows, quotas, agent policy),
// then a tenant like any other: listed by the admin API and the console, its budgets and kill switch the same. Its id
// is `wallet-<address, lowercase hex>`. Its one key is derived from the gateway's secret and the address (HMAC), never
// handed out: the sales step presents it for the buyer, so everything downstream (identify, lineage, tokens) sees an
// ordinary keyed caller. A sold call never authenticates by that key; it authenticates by the verified payment.
import { LRUCache } from "lru-cache";
import type { SalesConfig } from "../../config/sales-schema.js";
import { tenantSchema } from "../../config/tenant-schema.js";
import type { TenantConfig } from "../../config/schema.js";
import { GatewayError } from "../errors.js";
import type { TenantCaller } from "../identity/caller.js";
import { hashTenantKey } from "../identity/tenants.js";
import type { GatewayServices } from "../services.js";
import { audit } from "../operators/actions/tenant-changes.js";
import { soldMinutes } from "./price.js";

export const WALLET_TENANT_PREFIX = "wallet-";

/** The tenant id of a wallet: `wallet-` and its address in lowercase hex (no 0x). */
const walletTenantId = (address: string) => `${WALLET_TENANT_PREFIX}${address.toLowerCase().replace(/^0x/, "")}`;

const hex = (buf: ArrayBuffer) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");

export class WalletTenants {
  private readonly keys = new LRUCache<string, string>({ max: 10_000 });
  private hmacKey: Promise<CryptoKey> | undefined;

  constructor(
    private readonly services: GatewayServices,
    private readonly sales: SalesConfig,
    private readonly secret: string,
  ) {}

  /** The wallet tenant's key: HMAC-SHA256(secret, "tollgate wallet tenant:" + address), as a `tg_w_` string. */
  private async keyOf(address: string): Promise<string> {
    const known = this.keys.get(address);
    if (known) return known;
    this.hmacKey ??= crypto.subtle.importKey("raw", new TextEncoder().encode(this.secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    const mac = await crypto.subtle.sign("HMAC", await this.hmacKey, new TextEncoder().encode(`tollgate wallet tenant:${address}`));
    const key = `tg_w_${hex(mac)}`;
    this.keys.set(address, key);
    return key;
  }

  /** The template's tenant for `address`, its quota's longest timeout at least what a session or sandbox sale buys. */
  private template(id: string, hash: string): TenantConfig {
    const b = this.sales.buyer;
    const minutes = (["session", "sandbox"] as const)
      .map((cls) => this.sales.prices[cls])
      .filter((p) => p !== undefined)
      .map((p) => soldMinutes(this.services.config, p));
    const quotas = { ...b.quotas };
    if (minutes.length && quotas.maxTimeoutMinutes === undefined) quotas.maxTimeoutMinutes = Math.max(...minutes);
    // Jobs sold: the buyer may start them (scrape, crawl, extract: `jobs`; agent tasks: `agents`).
    const scopes = this.sales.prices.jobs ? [...new Set([...b.scopes, "jobs" as const, "agents" as const])] : b.scopes;
    return tenantSchema.parse({
      id,
      scopes,
      budget: b.budget,
      quotas,
      ...(b.policy ? { policy: b.policy } : {}),
      keys: [{ hash, label: "wallet (derived; never shown)", createdAt: new Date(this.services.now()).toISOString() }],
    });
  }

  /** The caller `address` signs in as (sign-in-with-x), when it has a wallet tenant (it bought something) that is enabled. */
  async existing(address: `0x${string}`): Promise<TenantCaller | undefined> {
    const tenant = this.services.directory.get(walletTenantId(address));
    if (!tenant) return undefined;
    if (!tenant.enabled) throw new GatewayError(403, "tenant_disabled", "This wallet's tenant is disabled (its kill switch is on).");
    return { via: "key", tenant, presented: await this.keyOf(address.toLowerCase()) };
  }

  /**
   * The caller a verified payment from `address` runs as: its wallet tenant, made now on the first purchase. A disabled
   * tenant (the kill switch) is refused before anything is settled.
   */
  async callerFor(address: `0x${string}`, requestId: string | undefined): Promise<TenantCaller> {
    const id = walletTenantId(address);
    const key = await this.keyOf(address.toLowerCase());
    const hash = await hashTenantKey(key);
    let tenant = this.services.directory.get(id);
    if (!tenant) {
      const stored = await this.services.stores.tenants.get(id);
      if (stored?.deleted) throw new GatewayError(403, "tenant_disabled", "This wallet's tenant was deleted by an operator.");
      if (!stored) {
        const record = { tenant: this.template(id, hash), source: "api" as const, updatedAt: this.services.now() };
        if (await this.services.stores.tenants.create(record)) {
          await audit(this.services, { tenant: id, requestId }, "tenant.create", `tenant:${id}`, undefined, {
            id,
            wallet: address,
            source: "sales",
          });
          this.services.logger.info("wallet tenant created", { tenant: id, requestId });
        }
      }
      await this.services.tenantSync.refresh();
      tenant = this.services.directory.get(id);
    }
    if (!tenant) throw new GatewayError(503, "state_unavailable", "The wallet's tenant could not be read; try again.");
    if (!tenant.enabled) throw new GatewayError(403, "tenant_disabled", "This wallet's tenant is disabled (its kill switch is on).");
    if (!tenant.keys.some((k) => k.hash === hash)) {
      // The gateway's secret changed since the tenant was made: its derived key follows.
      const record = await this.services.stores.tenants.get(id);
      if (record && !record.deleted) {
        const keys = [
          ...record.tenant.keys.filter((k) => k.label !== "wallet (derived; never shown)"),
          { hash, label: "wallet (derived; never shown)" },
        ];
        await this.services.stores.tenants.put({ ...record, tenant: { ...record.tenant, keys }, updatedAt: this.services.now() });
        await this.services.tenantSync.refresh();
        tenant = this.services.directory.get(id) ?? tenant;
      }
    }
    return { via: "key", tenant, presented: key };
  }
}
