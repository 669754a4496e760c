// Tenants and their keys: keys are stored only as SHA-256 hashes and looked up by hash.
import { LRUCache } from "lru-cache";
import type { TenantConfig } from "../../config/schema.js";
import type { Scope } from "../../config/tenant-schema.js";
import { GatewayError, errors } from "../errors.js";
import type { Context } from "hono";
import { hotHeader } from "../web/request-headers.js";
import type { PlatformSpeed } from "../web/speed.js";

export type Tenant = TenantConfig;

const hex = (buf: ArrayBuffer) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");

/** `sha256:<hex>` of a key, the only form in which keys are kept. */
export async function hashTenantKey(key: string): Promise<string> {
  return `sha256:${hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)))}`;
}

/** A new random tenant key: `tg_` + 32 random bytes, base64url. */
export function generateTenantKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return `tg_${btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(headers: Headers): string | undefined {
  const m = headers.get("authorization")?.match(/^bearer\s+(.+)$/i);
  return m ? m[1]!.trim() : undefined;
}

/** Reads the key a client presents, the way the SDK sends it (`x-api-key`) or as a bearer token. */
export function presentedKey(platform: PlatformSpeed, c: Context): string | undefined {
  return hotHeader(platform, c, "x-api-key")?.trim() || bearerToken(c.req.raw.headers);
}

interface KeyEntry {
  tenant: Tenant;
  expiresAt?: number;
}

/** The short id of a key in the admin API: the first 16 hex digits of its hash (the key itself is never kept). */
export const keyIdOf = (hash: string) => hash.slice("sha256:".length, "sha256:".length + 16);

/**
 * The tenants as this instance sees them: a local snapshot read synchronously on the hot path. With a shared
 * TenantStore behind it (./tenant-sync.ts), `authenticate` first makes sure the snapshot is recent.
 */
export class TenantDirectory {
  private byHash = new Map<string, KeyEntry>();
  /** Hashes of keys seen recently: a repeat caller costs a map lookup, not a SHA-256 (expiry/enabled still checked). */
  private readonly hashes = new LRUCache<string, string>({ max: 4096 });
  private byId = new Map<string, Tenant>();
  private refresher: (() => Promise<void> | undefined) | undefined;
  private onUse: ((hash: string) => void) | undefined;

  constructor(
    tenants: Tenant[],
    private readonly now: () => number = Date.now,
  ) {
    this.replace(tenants);
  }

  /** Swaps in a new snapshot at once (a revoked key or a disabled tenant stops working from the next lookup). */
  replace(tenants: Tenant[]): void {
    const byId = new Map<string, Tenant>();
    const byHash = new Map<string, KeyEntry>();
    for (const t of tenants) {
      byId.set(t.id, t);
      for (const k of t.keys) byHash.set(k.hash, { tenant: t, expiresAt: k.expiresAt ? Date.parse(k.expiresAt) : undefined });
    }
    this.byId = byId;
    this.byHash = byHash;
  }

  /** Called before each key lookup; it returns at once while the snapshot is recent. */
  setRefresher(fn: () => Promise<void> | undefined): void {
    this.refresher = fn;
  }

  /** Told the hash of each key that authenticates (for "last used"; it must return at once). */
  setUseListener(fn: (hash: string) => void): void {
    this.onUse = fn;
  }

  /**
   * Brings the snapshot up to date when it is older than the tenant sync's bound (the wait a key lookup makes): a
   * promise to wait for, or undefined (recent enough, the usual case). A token's holder waits for it before its
   * parents (tenant enabled, key held) are read, so a key revoked on another instance ends its tokens here as fast as
   * the key itself.
   */
  stale(): Promise<void> | undefined {
    return this.refresher?.();
  }

  /** The snapshot's tenant, without waiting (callers holding a token never wait; requests keep the snapshot recent). */
  get(id: string): Tenant | undefined {
    return this.byId.get(id);
  }

  list(): Tenant[] {
    return [...this.byId.values()];
  }

  /** Resolves a presented key to its tenant, or throws 401 saying why (unknown, expired, disabled). */
  async authenticate(key: string | undefined): Promise<Tenant> {
    if (!key) throw errors.unauthorized();
    const stale = this.refresher?.();
    if (stale) await stale;
    let hash = this.hashes.get(key);
    if (!hash) {
      hash = await hashTenantKey(key);
      // Only keys that exist are remembered, so junk keys cannot flush real ones out.
      if (this.byHash.has(hash)) this.hashes.set(key, hash);
    }
    return this.tenantOf(hash);
  }

  /**
   * The same answer without waiting, for a key seen lately while the snapshot is recent; undefined when it takes a
   * wait (a refresh, a key to hash): then `authenticate`. `authenticateNow(k) ?? (await authenticate(k))`.
   */
  authenticateNow(key: string | undefined): Tenant | undefined {
    if (!key) throw errors.unauthorized();
    const hash = this.hashes.get(key);
    if (!hash || this.refresher?.()) return undefined;
    return this.tenantOf(hash);
  }

  private tenantOf(hash: string): Tenant {
    const entry = this.byHash.get(hash);
    if (!entry) throw errors.unauthorized("Invalid API key.", "invalid_api_key");
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.now()) {
      throw errors.unauthorized("This API key has expired; ask your gateway admin for a new one.", "api_key_expired");
    }
    if (!entry.tenant.enabled) throw errors.unauthorized("This tenant is disabled.", "tenant_disabled");
    this.onUse?.(hash);
    return entry.tenant;
  }
}

export function requireScope(tenant: Tenant, scope: Scope): void {
  if (!tenant.scopes.includes(scope)) {
    throw new GatewayError(403, "missing_scope", `This key lacks the "${scope}" scope needed for this route.`, { requiredScope: scope });
  }
}
