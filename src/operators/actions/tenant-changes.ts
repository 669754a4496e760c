// Every change an admin makes to a tenant goes through here: read the stored record, apply, write it back as an API
// record (which then wins over the config file), record the before and after in the audit log, reload this instance's
// snapshot at once, and pull the kill switch when the change disables the tenant.
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { keyIdOf, type Tenant } from "../../identity/tenants.js";
import type { StoredTenant } from "../../state/types.js";
import { killTenant } from "./kill-switch.js";
import { receiverProblems } from "../../web/destinations.js";
import { stateKeys } from "../../state/keys.js";
import type { Actor } from "./actor.js";
import { holdsFor, withHolds } from "../../identity/tenant-holds.js";
import type { TenantConfig } from "../../../config/schema.js";

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

/** Records an action in the audit log, under its actor. */
export async function audit(services: GatewayServices, by: Actor, action: string, target: string, before: unknown, after: unknown) {
  await services.stores.audit.append({
    at: services.now(),
    actor: by.person ?? by.tenant ?? "unknown",
    action,
    target,
    requestId: by.requestId,
    ...(before !== undefined ? { before } : {}),
    ...(after !== undefined ? { after } : {}),
  });
}

/** An admin cannot lock itself out: disabling or deleting itself, or dropping its own admin scope, is refused. */
function guardSelf(by: Actor, before: Tenant, after: Tenant | undefined) {
  if (by.tenant !== before.id || !before.scopes.includes("admin")) return; // a tenant managing its own keys is no admin
  if (!after?.enabled || !after.scopes.includes("admin")) {
    throw new GatewayError(
      409,
      "admin_lockout",
      "An admin tenant cannot disable, delete or drop the admin scope of itself; use another admin tenant.",
    );
  }
}

/**
 * Until when the fleet can be administered: the latest end (epoch ms; Infinity for a key without expiry) of any key of
 * an enabled admin tenant still live at `now`; 0 when there is none.
 */
export function adminHorizon(tenants: Tenant[], now: number): number {
  let until = 0;
  for (const t of tenants) {
    if (!t.enabled || !t.scopes.includes("admin")) continue;
    for (const k of t.keys) {
      const end = k.expiresAt ? Date.parse(k.expiresAt) : Number.POSITIVE_INFINITY;
      if (end > now && end > until) until = end;
    }
  }
  return until;
}

/**
 * The fleet keeps its last admin key: a change (revoke, expire now or later, rotate to a key that ends sooner,
 * disable, delete, drop the scope) that would bring forward the moment the gateway has no live admin key left is
 * refused. Revoking one of two keys without expiry changes nothing; expiring the only such key at any date does.
 */
async function guardLastAdminKey(services: GatewayServices, id: string, after: Tenant | undefined) {
  const now = services.now();
  const all = (await services.stores.tenants.list()).filter((r) => !r.deleted).map((r) => r.tenant);
  const others = all.filter((t) => t.id !== id);
  const before = adminHorizon(all, now);
  const then = adminHorizon(after ? [...others, after] : others, now);
  if (then < before) {
    const when = then === 0 ? "without a live admin key" : `without a live admin key from ${new Date(then).toISOString()}`;
    throw new GatewayError(409, "last_admin_key", `This would leave the gateway ${when}; create another admin key (without expiry) first.`);
  }
}

/** How long a change to an admin tenant waits for another one in progress (the guard above reads, then writes). */
const ADMIN_CHANGE_WAIT_MS = 3_000;
const ADMIN_CHANGE_LOCK_MS = 10_000;

/**
 * Runs `work` holding the fleet-wide lock on admin tenant changes, so two concurrent revocations (on two instances,
 * say) cannot each see the other's key as the one that remains. @throws GatewayError 409 change_in_progress.
 */
async function withAdminChangeLock<T>(services: GatewayServices, work: () => Promise<T>): Promise<T> {
  const { kv } = services.stores;
  const key = stateKeys.adminChangeLock;
  const deadline = Date.now() + ADMIN_CHANGE_WAIT_MS;
  while (!(await kv.setIfAbsent(key, services.instanceId, ADMIN_CHANGE_LOCK_MS))) {
    if (Date.now() > deadline)
      throw new GatewayError(409, "change_in_progress", "Another change to an admin tenant is in progress; try again in a moment.");
    await new Promise((r) => setTimeout(r, 25 + Math.random() * 50));
  }
  try {
    return await work();
  } finally {
    await kv.delete(key);
  }
}

export interface ChangeOptions {
  /** Audit action name, e.g. "tenant.update", "key.revoke". */
  action: string;
  target?: string;
  /** Delete instead of update (a tombstone stays, so the config file does not bring the tenant back). */
  remove?: boolean;
  /** Who the new record comes from: "api" (an admin's edit, the default) or "config" (an applied config file). */
  source?: StoredTenant["source"];
}

/** A tenant's alert receivers must pass the destination rules, as in the config file (./destinations.ts). */
export function refuseReceivers(services: GatewayServices, tenant: Tenant): void {
  const fields = receiverProblems(services.config.alerts, tenant.alerts ?? {});
  if (fields.length) throw new GatewayError(400, "invalid_body", fields.map((f) => `${f.field}: ${f.problem}`).join("; "), { fields });
}

/** The gateway's own config file and its block for tenant `id`, when that file names it (one owner per tenant). */
export function fileOwner(services: GatewayServices, id: string): { file: string; tenant: TenantConfig } | undefined {
  const tenant = services.tenantSync.fileTenants().find((t) => t.id === id);
  return tenant && { tenant, file: services.tenantSync.fileName ?? "(the file the gateway was started with)" };
}

/** What a change to a file-owned tenant is told: the tenant, the file, and what to do instead. */
export const ownedRefusal = (id: string, file: string) =>
  `tenant "${id}" is owned by the gateway's config file ${file}; edit it there (a reload applies it), or remove the tenant from that file to manage it through the admin API or apply`;

/** The operational actions a file-owned tenant still takes (docs/config-as-code.md#one-owner-per-tenant). */
const OPERATIONAL_ACTIONS = "disable, enable, and its keys' create, rotate, revoke, and expire (sooner)";

/** Applies `mutate` to the live tenant `id` and returns the new record. */
export async function changeTenant(
  services: GatewayServices,
  by: Actor,
  id: string,
  opts: ChangeOptions,
  mutate: (t: Tenant) => Tenant = (t) => t,
): Promise<StoredTenant> {
  const current = await liveRecord(services, id);
  // A change to an admin tenant is made under the lock, on the record read under it (making one an admin only adds).
  if (!current.tenant.scopes.includes("admin")) return applyChange(services, by, current, opts, mutate);
  return withAdminChangeLock(services, async () => applyChange(services, by, await liveRecord(services, id), opts, mutate));
}

async function applyChange(
  services: GatewayServices,
  by: Actor,
  before: StoredTenant,
  opts: ChangeOptions,
  mutate: (t: Tenant) => Tenant,
): Promise<StoredTenant> {
  const id = before.tenant.id;
  let tenant = mutate(structuredClone(before.tenant));
  guardSelf(by, before.tenant, opts.remove ? undefined : tenant);
  if (!opts.remove) refuseReceivers(services, tenant);
  // One owner per tenant: the gateway's own file decides a tenant it names. Its reload writes the file's block with the
  // operators' holds laid over it; anyone else may only hold it (disable, keys), kept over the file from then on.
  const owner = fileOwner(services, id);
  let holds = owner ? before.holds : undefined;
  if (owner && opts.source === "config") tenant = withHolds(tenant, before.holds);
  else if (owner) {
    const r = opts.remove ? { refused: ["(the tenant itself: delete)"] } : holdsFor(owner.tenant, before.tenant, tenant);
    if (r.refused.length) {
      throw new GatewayError(
        409,
        "config_conflict",
        `${ownedRefusal(id, owner.file)}. Refused: ${r.refused.join(", ")}. Allowed on it here: ${OPERATIONAL_ACTIONS}.`,
        { tenant: id, file: owner.file, fields: r.refused },
      );
    }
    holds = r.holds;
  }
  // A change that changes nothing (a console Save with nothing edited) writes nothing and is not audited.
  if (!opts.remove && JSON.stringify(tenant) === JSON.stringify(before.tenant)) return before;
  await guardLastAdminKey(services, id, opts.remove ? undefined : tenant);
  const after: StoredTenant = {
    tenant,
    // A file-owned tenant is the file's ("config": a start seeds the file over it) unless operators hold it: a held
    // record is not seeded over (TenantStore.seed), the start lays the holds over the file itself (TenantSync).
    source: owner && !opts.remove ? (holds ? "api" : "config") : (opts.source ?? "api"),
    updatedAt: services.now(),
    ...(opts.remove ? { deleted: true } : {}),
    ...(holds && !opts.remove ? { holds } : {}),
  };
  await services.stores.tenants.put(after);
  await audit(services, by, opts.action, opts.target ?? `tenant:${id}`, tenantView(before), opts.remove ? undefined : tenantView(after));
  await services.tenantSync.refresh();
  if (before.tenant.enabled && (opts.remove || !tenant.enabled)) {
    await killTenant(services, id, opts.remove ? "deleted by an admin" : "disabled by an admin", by.tenant);
  }
  return after;
}
