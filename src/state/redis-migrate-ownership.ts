// `tollgate state migrate`, ownership's part: moves ownership written in the shared layout (every key under the one
// "{own}" hash tag: one slot for the whole fleet) to the tenant layout (./redis-ownership.ts): each resource's record
// on its own slot, each tenant's lists, live sets, ended set and sequence under "{t:<tenant>}". Run with the gateways
// stopped. It copies (records with their time to live, list members with their sequence, ended members with their
// retention end), so running it again writes the same: an interrupted run is finished by running it again. The old
// keys are left as they were (a way back); the marker, written last, makes the new version accept the Redis.
import { StateUnavailableError } from "./errors.js";
import type { RedisConnection } from "./redis-connection.js";
import { keysMatching } from "./redis-migrate.js";

/** Set once ownership is in the tenant layout; the gateway refuses a "{own}" ownership without it. */
const OWNERSHIP_MARKER = "ownership-layout";

export interface OwnershipMigration {
  /** Resource records copied. */
  resources: number;
  tenants: number;
  /** The marker was there already: nothing was copied. */
  already: boolean;
}

/** A resource's record in the tenant layout: no hash tag, so it hashes (and spreads) by kind and id. */
export const ownRecordKey = (r: RedisConnection, kind: string, id: string) => `${r.prefix}own:${kind}:${id}`;

/** A key of the tenant's ownership group, "{t:<tenant>}:own:…" (the tenant's slot, beside its ledger). */
export const ownTenantKey = (r: RedisConnection, tenant: string, ...parts: string[]) => r.tenantKey(tenant, "own", ...parts);

const oldKey = (r: RedisConnection, name: string) => `${r.prefix}{own}:${name}`;

/** Rejects (fails closed) while "{own}" ownership waits to be migrated: every owned resource would answer 404. */
export async function refuseUnmigratedOwnership(r: RedisConnection): Promise<void> {
  const [old, marker] = await Promise.all([
    r.run(() => r.client.exists(oldKey(r, "seq"))),
    r.run(() => r.client.get(r.prefix + OWNERSHIP_MARKER)),
  ]);
  if (old === 1 && marker !== "tenant")
    throw new StateUnavailableError(
      "Redis holds resource ownership in the shared layout ({own}) that was not moved to the tenant layout: stop the " +
        'gateways and run `tollgate state migrate --config FILE` (or set state.ownershipLayout = "shared"); see docs/state-layout.md',
    );
}

const LIST = /^list:([^:]+):t:(.+)$/;
const ACTIVE = /^active:([^:]+):t:(.+)$/;
const RECORD = /^([^:]+):(.+)$/;

/** Copies the "{own}" ownership into the tenant layout (see the top of this file). */
export async function migrateOwnershipToTenantLayout(r: RedisConnection): Promise<OwnershipMigration> {
  if (!r.ownershipPerTenant)
    throw new Error('state migrate: ownership is not in the tenant layout here (a Redis Cluster, ownershipLayout "tenant")');
  const c = r.client;
  if ((await r.run(() => c.get(r.prefix + OWNERSHIP_MARKER))) === "tenant") return { resources: 0, tenants: 0, already: true };
  const base = oldKey(r, "");
  const tenants = new Set<string>();
  let resources = 0;
  const check = (replies: [Error | null, unknown][] | null) => {
    for (const [err] of replies ?? []) if (err) throw err;
  };

  for (const key of await keysMatching(r, `${base}*`)) {
    const name = key.slice(base.length);
    if (name === "seq" || name === "ended") continue;
    let m = LIST.exec(name);
    if (m) {
      const [, kind, tenant] = m as unknown as [string, string, string];
      const rows = await r.run(() => c.zrange(key, "0", "-1", "WITHSCORES"));
      // WITHSCORES answers member, score, …; ZADD takes score, member, …
      const pairs: string[] = [];
      for (let i = 0; i < rows.length; i += 2) pairs.push(rows[i + 1]!, rows[i]!);
      if (pairs.length) await r.run(() => c.zadd(ownTenantKey(r, tenant, "list", kind), ...pairs));
      tenants.add(tenant);
      continue;
    }
    m = ACTIVE.exec(name);
    if (m) {
      const [, kind, tenant] = m as unknown as [string, string, string];
      const ids = await r.run(() => c.smembers(key));
      if (ids.length) await r.run(() => c.sadd(ownTenantKey(r, tenant, "active", kind), ...ids));
      tenants.add(tenant);
      continue;
    }
    m = RECORD.exec(name);
    if (!m) continue;
    const [, kind, id] = m as unknown as [string, string, string];
    const [h, pttl] = await r.run(() => Promise.all([c.hgetall(key), c.pttl(key)]));
    if (!h?.tenant || pttl === -2) continue; // gone meanwhile (an ended record's retention ran out)
    const to = ownRecordKey(r, kind, id);
    const p = c.multi(); // one key: one slot
    p.del(to);
    p.hset(to, h);
    if (pttl > 0) p.pexpire(to, pttl);
    check(await r.run(() => p.exec()));
    tenants.add(h.tenant);
    resources++;
  }

  // Ended resources, "<kind>:<tenant>:<id>" scored by when their retention ends, into their tenant's ended set.
  const ended = await r.run(() => c.zrange(oldKey(r, "ended"), "0", "-1", "WITHSCORES"));
  for (let i = 0; i < ended.length; i += 2) {
    const member = ended[i]!;
    const a = member.indexOf(":");
    const b = member.indexOf(":", a + 1);
    if (a < 0 || b < 0) continue;
    const tenant = member.slice(a + 1, b);
    await r.run(() => c.zadd(ownTenantKey(r, tenant, "ended"), ended[i + 1]!, `${member.slice(0, a)}:${member.slice(b + 1)}`));
    tenants.add(tenant);
  }

  // Each tenant's sequence starts above every migrated one (the old sequence was fleet-wide), never lowered.
  const seq = Number((await r.run(() => c.get(oldKey(r, "seq")))) ?? 0);
  for (const t of tenants) {
    const key = ownTenantKey(r, t, "seq");
    const cur = Number((await r.run(() => c.get(key))) ?? 0);
    if (seq > cur) await r.run(() => c.set(key, String(seq)));
  }
  await r.run(() => c.set(r.prefix + OWNERSHIP_MARKER, "tenant"));
  return { resources, tenants: tenants.size, already: false };
}
