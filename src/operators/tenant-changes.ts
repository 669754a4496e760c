// Every change an admin makes to a tenant goes through here: read the stored record, apply, write it back as an API
// record (which then wins over the config file), record the before and after in the audit log, reload this instance's
// snapshot at once, and pull the kill switch when the change disables the tenant.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { keyIdOf, type Tenant } from "../identity/tenants.js";
import type { StoredTenant } from "../state/types.js";
import { killTenant } from "./kill-switch.js";
import { receiverProblems } from "./destinations.js";

/** A tenant as the admin API shows it: keys by id, never by hash. */
export function tenantView(r: StoredTenant) {
  const { keys, ...rest } = r.tenant;
  return {
    ...rest,
    source: r.source,
    updatedAt: new Date(r.updatedAt).toISOString(),
    keys: keys.map((k) => ({
      id: keyIdOf(k.hash),
      ...(k.label ? { label: k.label } : {}),
      ...(k.expiresAt ? { expiresAt: k.expiresAt } : {}),
      ...(k.createdAt ? { createdAt: k.createdAt } : {}),
    })),
  };
}

/** The stored record of a live tenant, or 404. */
export async function liveRecord(services: GatewayServices, id: string): Promise<StoredTenant> {
  const r = await services.stores.tenants.get(id);
  if (!r || r.deleted) throw new GatewayError(404, "tenant_not_found", `No tenant "${id}".`);
  return r;
}

export async function audit(
  services: GatewayServices,
  c: Context<GatewayEnv>,
  action: string,
  target: string,
  before: unknown,
  after: unknown,
) {
  await services.stores.audit.append({
    at: services.now(),
    actor: c.get("actor") ?? c.get("tenant")?.id ?? "unknown",
    action,
    target,
    requestId: c.get("requestId"),
    ...(before !== undefined ? { before } : {}),
    ...(after !== undefined ? { after } : {}),
  });
}

/** An admin cannot lock itself out: disabling or deleting itself, or dropping its own admin scope, is refused. */
function guardSelf(c: Context<GatewayEnv>, before: Tenant, after: Tenant | undefined) {
  if (c.get("tenant")?.id !== before.id || !before.scopes.includes("admin")) return; // a tenant managing its own keys is no admin
  if (!after?.enabled || !after.scopes.includes("admin")) {
    throw new GatewayError(
      409,
      "admin_lockout",
      "An admin tenant cannot disable, delete or drop the admin scope of itself; use another admin tenant.",
    );
  }
}

/** Keys that can act as an admin now: of enabled admin tenants, not expired. */
function liveAdminKeys(tenants: Tenant[], now: number): number {
  let n = 0;
  for (const t of tenants) {
    if (!t.enabled || !t.scopes.includes("admin")) continue;
    n += t.keys.filter((k) => !k.expiresAt || Date.parse(k.expiresAt) > now).length;
  }
  return n;
}

/** The fleet keeps at least one live admin key: a change (revoke, expire, disable, delete) leaving none is refused. */
async function guardLastAdminKey(services: GatewayServices, id: string, after: Tenant | undefined) {
  const now = services.now();
  const all = (await services.stores.tenants.list()).filter((r) => !r.deleted).map((r) => r.tenant);
  const others = all.filter((t) => t.id !== id);
  if (liveAdminKeys(all, now) > 0 && liveAdminKeys(after ? [...others, after] : others, now) === 0) {
    throw new GatewayError(409, "last_admin_key", "This would leave the gateway without a live admin key; create another admin key first.");
  }
}

export interface ChangeOptions {
  /** Audit action name, e.g. "tenant.update", "key.revoke". */
  action: string;
  target?: string;
  /** Delete instead of update (a tombstone stays, so the config file does not bring the tenant back). */
  remove?: boolean;
}

/** Applies `mutate` to the live tenant `id` and returns the new record. */
/** A tenant's alert receivers must pass the destination rules, as in the config file (./destinations.ts). */
export function refuseReceivers(services: GatewayServices, tenant: Tenant): void {
  const fields = receiverProblems(services.config.alerts, tenant.alerts ?? {});
  if (fields.length) throw new GatewayError(400, "invalid_body", fields.map((f) => `${f.field}: ${f.problem}`).join("; "), { fields });
}

export async function changeTenant(
  services: GatewayServices,
  c: Context<GatewayEnv>,
  id: string,
  opts: ChangeOptions,
  mutate: (t: Tenant) => Tenant = (t) => t,
): Promise<StoredTenant> {
  const before = await liveRecord(services, id);
  const tenant = mutate(structuredClone(before.tenant));
  guardSelf(c, before.tenant, opts.remove ? undefined : tenant);
  if (!opts.remove) refuseReceivers(services, tenant);
  await guardLastAdminKey(services, id, opts.remove ? undefined : tenant);
  const after: StoredTenant = { tenant, source: "api", updatedAt: services.now(), ...(opts.remove ? { deleted: true } : {}) };
  await services.stores.tenants.put(after);
  await audit(services, c, opts.action, opts.target ?? `tenant:${id}`, tenantView(before), opts.remove ? undefined : tenantView(after));
  await services.tenantSync.refresh();
  if (before.tenant.enabled && (opts.remove || !tenant.enabled)) {
    await killTenant(services, id, opts.remove ? "deleted by an admin" : "disabled by an admin", c.get("tenant")?.id);
  }
  return after;
}
