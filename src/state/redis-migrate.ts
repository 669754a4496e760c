// `tollgate state migrate`: moves a Redis ledger written in the shared layout (every key under the one "{ledger}" hash
// tag, what a Cluster or `hashTags` used before the tenant layout) to the tenant layout ("{t:<tenant>}" per tenant;
// docs/state-layout.md). Run with the gateways stopped: it copies, so a ledger written meanwhile would be missed.
//
// What it copies, per tenant slot: every entry (its counter fields renamed to the tenant's counters), its index
// memberships (all, its state, credits, its resource) with its sequence, its hold with the score it had, the tenant's
// budget and credits counters with their time to live, the tenant's sequence (the highest it had), the id -> tenant
// key and the set of tenants. Copying is idempotent: run it again and it writes the same. The old keys are left as
// they were (a way back); the marker key makes the tenant-layout ledger accept the Redis, and is written last.
import { StateUnavailableError } from "./errors.js";
import type { RedisConnection } from "./redis-connection.js";

/** Set once the ledger is in the tenant layout; the gateway refuses a shared-layout ledger without it. */
const LAYOUT_MARKER = "ledger-layout";

export interface LedgerMigration {
  entries: number;
  counters: number;
  tenants: number;
  /** The marker was there already: nothing was copied. */
  already: boolean;
}

const COUNTER = /^(budget|credits):(.+):(d:\d{4}-\d{2}-\d{2}|m:\d{4}-\d{2}|t)$/;
const COUNTER_FIELDS = ["kd", "km", "kt", "cd", "cm", "ct"];
const HELD = new Set(["reserved", "uncertain"]);

interface ScanNode {
  scan(cursor: string, ...args: (string | number)[]): Promise<[string, string[]]>;
}

/** Every key matching `pattern`, on every primary of a Cluster or on the one Redis. */
export async function keysMatching(r: RedisConnection, pattern: string): Promise<string[]> {
  const client = r.client as unknown as { nodes?: (role: string) => ScanNode[] } & ScanNode;
  const nodes = typeof client.nodes === "function" ? client.nodes("master") : [client];
  const out: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    for (let i = 0; i < 1_000_000; i++) {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      out.push(...keys);
      cursor = next;
      if (cursor === "0") break;
    }
  }
  return [...new Set(out)];
}

/** The tenant layout's set of every tenant that reserved: what the fleet views fan out over. */
export const ledgerTenantsKey = (r: RedisConnection) => `${r.prefix}ledger-tenants`;

/** The tenant layout's id -> tenant key: on its own slot, found by the id alone. */
export const ledgerIdKey = (r: RedisConnection, id: string) => `${r.prefix}ledger-id:${id}`;

/** Whether this Redis holds a shared-layout ledger that was not migrated (the gateway refuses to use it then). */
async function unmigratedLedger(r: RedisConnection): Promise<boolean> {
  const [old, marker] = await Promise.all([
    r.run(() => r.client.exists(`${r.prefix}{ledger}:seq`)),
    r.run(() => r.client.get(r.prefix + LAYOUT_MARKER)),
  ]);
  return old === 1 && marker !== "tenant";
}

/** Rejects (fails closed) while a shared-layout ledger waits to be migrated: budgets would start again from zero. */
export async function refuseUnmigrated(r: RedisConnection): Promise<void> {
  if (await unmigratedLedger(r))
    throw new StateUnavailableError(
      "Redis holds a ledger in the shared layout ({ledger}) that was not moved to the tenant layout: stop the gateways and " +
        'run `tollgate state migrate --config FILE` (or set state.ledgerLayout = "shared"); see docs/state-layout.md',
    );
}

/** Copies the shared-layout ledger into the tenant layout (see the top of this file). */
export async function migrateLedgerToTenantLayout(r: RedisConnection): Promise<LedgerMigration> {
  if (!r.ledgerPerTenant)
    throw new Error('state migrate: the ledger is not in the tenant layout here (a Redis Cluster, ledgerLayout "tenant")');
  const c = r.client;
  if ((await r.run(() => c.get(r.prefix + LAYOUT_MARKER))) === "tenant") return { entries: 0, counters: 0, tenants: 0, already: true };
  const old = (name: string) => `${r.prefix}{ledger}:${name}`;
  const tenants = new Set<string>();

  // Counters, with their time to live.
  const counterKeys = [...(await keysMatching(r, `${old("budget")}:*`)), ...(await keysMatching(r, `${old("credits")}:*`))];
  let counters = 0;
  for (const key of counterKeys) {
    const name = key.slice(old("").length);
    const m = COUNTER.exec(name);
    if (!m) continue;
    const tenant = m[2]!;
    const [value, pttl] = await r.run(() => Promise.all([c.get(key), c.pttl(key)]));
    if (value === null) continue;
    const to = r.tenantKey(tenant, name);
    await r.run(() => (pttl > 0 ? c.set(to, value, "PX", pttl) : c.set(to, value)));
    tenants.add(tenant);
    counters++;
  }

  // Entries, a page at a time from the fleet-wide index (every entry is in it, scored by its sequence).
  const seqs = new Map<string, number>();
  let entries = 0;
  const PAGE = 500;
  for (let start = 0; ; start += PAGE) {
    const page = await r.run(() => c.zrange(old("idx:all:g"), String(start), String(start + PAGE - 1), "WITHSCORES"));
    for (let i = 0; i < page.length; i += 2) {
      const id = page[i]!;
      const seq = Number(page[i + 1]);
      const h = await r.run(() => c.hgetall(old(`e:${id}`)));
      if (!h?.tenant) continue;
      const t = h.tenant;
      const kind = h.kind === "credits" ? "credits" : "x402";
      const holdScore = await r.run(() => c.zscore(old(kind === "credits" ? "creditholds" : "holds"), id));
      const fields: Record<string, string> = { ...h };
      for (const f of COUNTER_FIELDS) if (fields[f]?.startsWith(old(""))) fields[f] = r.tenantKey(t, fields[f]!.slice(old("").length));
      const k = (...parts: string[]) => r.tenantKey(t, "ledger", ...parts);
      const p = c.pipeline(); // one tenant's slot
      p.del(k("e", id));
      p.hset(k("e", id), fields);
      p.zadd(k("idx", "all", "t", t), seq, id);
      if (h.state) p.zadd(k("idx", h.state, "t", t), seq, id);
      if (kind === "credits") p.zadd(k("idx", "credits", "t", t), seq, id);
      if (h.resource) p.zadd(k("idx", "res", h.resource), seq, id);
      if (holdScore !== null && HELD.has(h.state ?? "")) p.zadd(k(kind === "credits" ? "creditholds" : "holds"), holdScore, id);
      const replies = (await r.run(() => p.exec())) ?? [];
      for (const [err] of replies) if (err) throw err;
      await r.run(() => c.set(ledgerIdKey(r, id), t));
      seqs.set(t, Math.max(seqs.get(t) ?? 0, seq));
      tenants.add(t);
      entries++;
    }
    if (page.length < PAGE * 2) break;
  }
  for (const [t, seq] of seqs) {
    // Never lower a sequence (a second run, or entries reserved in the new layout already).
    const cur = Number((await r.run(() => c.get(r.tenantKey(t, "ledger", "seq")))) ?? 0);
    if (seq > cur) await r.run(() => c.set(r.tenantKey(t, "ledger", "seq"), String(seq)));
  }
  if (tenants.size) await r.run(() => c.sadd(ledgerTenantsKey(r), ...tenants));
  await r.run(() => c.set(r.prefix + LAYOUT_MARKER, "tenant"));
  return { entries, counters, tenants: tenants.size, already: false };
}
