// The state contract on a real three-primary Redis Cluster (redis-server --cluster-enabled yes, joined with
// redis-cli --cluster create): every multi-key script must find its keys on one slot, which the hash-tagged key
// groups ensure, while single-key values spread over the shards.
import { Cluster, Redis } from "ioredis";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StateUnavailableError } from "../../src/state/errors.js";
import { redisStores } from "../../src/state/redis.js";
import { stateContract } from "./contract.js";
import { type RedisClusterSet, startRedisCluster } from "./redis-ha.js";

const run = promisify(execFile);

let cluster: RedisClusterSet;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const prefix = () => `c${crypto.randomUUID().slice(0, 8)}:`;

stateContract({
  name: "redis cluster",
  fresh: async () => redisStores({ cluster: cluster.nodes }, { prefix: prefix() }),
  pair: async () => {
    const p = prefix();
    return [redisStores({ cluster: cluster.nodes }, { prefix: p }), redisStores({ cluster: cluster.nodes }, { prefix: p })];
  },
  retaining: async (ms) => redisStores({ cluster: cluster.nodes }, { prefix: prefix(), endedRetentionMs: ms }),
});

describe("Redis Cluster key layout", () => {
  it("puts each script's key group on one slot and spreads single keys over the three primaries", async () => {
    const p = prefix();
    const stores = redisStores({ cluster: cluster.nodes }, { prefix: p });
    const admin = new Cluster(cluster.nodes, { lazyConnect: false });
    try {
      const reserved = await stores.ledger.reserve(
        { id: "e1", tenant: "t1", route: "/r", fingerprint: "f", amount: "5", asset: "a", network: "n", payee: "p" },
        { daily: 100n },
        Date.now(),
      );
      expect(reserved.ok).toBe(true);
      await stores.ownership.claim("sandbox", "sb", "t1");
      for (let i = 0; i < 60; i++) await stores.kv.set(`k${i}`, "v", 60_000);
      const keys: string[] = [];
      for (const node of admin.nodes("master")) keys.push(...(await node.keys(`${p}*`)).map((k) => `${node.options.port}|${k}`));
      const slotOf = async (k: string) => Number(await admin.cluster("KEYSLOT", k));
      const groups = new Map<string, Set<number>>();
      for (const entry of keys) {
        const key = entry.slice(entry.indexOf("|") + 1);
        const group = /^[^:]+:\{([\w:]+)\}:/.exec(key)?.[1];
        if (!group) continue;
        if (!groups.has(group)) groups.set(group, new Set());
        groups.get(group)!.add(await slotOf(key));
      }
      // The ledger's keys and the tenant's ownership lists carry its tenant as hash tag: one slot per tenant. The
      // resource's own record has no tag: it hashes by kind and id (nothing sits under a fleet-wide "{own}").
      expect([...groups.keys()].sort()).toEqual(["t:t1"]);
      expect(keys.some((k) => k.endsWith(`|${p}own:sandbox:sb`))).toBe(true);
      expect(keys.filter((k) => k.includes(`${p}{t:t1}:own:`)).length).toBeGreaterThan(0);
      for (const slots of groups.values()) expect(slots.size).toBe(1);
      const kvNodes = new Set(keys.filter((k) => k.includes(":kv:")).map((k) => k.slice(0, k.indexOf("|"))));
      expect(kvNodes.size).toBe(3);
    } finally {
      admin.disconnect();
      await stores.close();
    }
  });
});

describe("Redis Cluster: the ledger sharded by tenant", () => {
  const entry = (id: string, tenant: string, amount = "5") => ({
    id,
    tenant,
    route: "/r",
    fingerprint: "f",
    amount,
    asset: "a",
    network: "n",
    payee: "p",
  });

  it("spreads tenants' ledgers over the three primaries, and reads across them from another instance", async () => {
    const p = prefix();
    const a = redisStores({ cluster: cluster.nodes }, { prefix: p });
    const b = redisStores({ cluster: cluster.nodes }, { prefix: p });
    const admin = new Cluster(cluster.nodes, { lazyConnect: false });
    try {
      const t0 = Date.now() - 3_600_000;
      const tenants = Array.from({ length: 24 }, (_, i) => `tenant-${i}`);
      for (const [i, t] of tenants.entries()) expect((await a.ledger.reserve(entry(`e${i}`, t), { daily: 100n }, t0 + i)).ok).toBe(true);
      // Each tenant's keys on one slot; the tenants over every primary.
      const slots = new Set<number>();
      for (const t of tenants) slots.add(Number(await admin.cluster("KEYSLOT", `${p}{t:${t}}:ledger:e:x`)));
      const ranges = await admin.cluster("SLOTS");
      const primaries = new Set([...slots].map((slot) => ranges.find(([from, to]) => slot >= from && slot <= to)![2][1]));
      expect(primaries.size).toBe(3);

      // Another instance (nothing remembered) commits and reads by id alone, and sees the fleet.
      await b.ledger.commit("e3", "0xtx", Date.now());
      expect((await b.ledger.get("e3"))?.state).toBe("committed");
      const all = await b.ledger.list({});
      expect(all.map((e) => e.id)).toEqual(tenants.map((_, i) => `e${i}`).reverse());
      expect((await b.ledger.list({ limit: 2 })).map((e) => e.id)).toEqual(["e23", "e22"]);
      expect((await b.ledger.list({ state: "committed" })).map((e) => e.id)).toEqual(["e3"]);
      // The reconciler's view: every tenant's expired holds, soonest first, across the primaries.
      const holds = await b.ledger.expiredHolds(Date.now(), 100);
      expect(holds.map((e) => e.id)).toEqual(tenants.map((_, i) => `e${i}`).filter((id) => id !== "e3"));
      expect((await b.ledger.expiredHolds(Date.now(), 3)).map((e) => e.id)).toEqual(["e0", "e1", "e2"]);
      expect((await b.ledger.usage("tenant-3", Date.now())).total).toBe(5n);
    } finally {
      admin.disconnect();
      await a.close();
      await b.close();
    }
  });

  it("reaches an entry whose id key was lost through the reconciler's view, and answers unknown ids in one read", async () => {
    const p = prefix();
    const a = redisStores({ cluster: cluster.nodes }, { prefix: p });
    const admin = new Cluster(cluster.nodes, { lazyConnect: false });
    try {
      const then = Date.now() - 20 * 60_000;
      expect((await a.ledger.reserve(entry("lost", "acme", "7"), { daily: 10n }, then)).ok).toBe(true);
      expect((await a.ledger.reserve(entry("other", "globex", "1"), { daily: 10n }, then)).ok).toBe(true);
      await admin.del(`${p}ledger-id:lost`);
      const b = redisStores({ cluster: cluster.nodes }, { prefix: p });
      try {
        // Unknown to this instance by id: no search over the tenants.
        expect(await b.ledger.get("lost")).toBeUndefined();
        expect(await b.ledger.get("nobody")).toBeUndefined();
        await expect(b.ledger.commit("nobody", undefined, Date.now())).rejects.toThrow(/ledger entry nobody not found/);
        // The reconciler finds the stale hold in its tenant's shard, and can then settle it by id.
        const holds = await b.ledger.expiredHolds(Date.now(), 10);
        expect(holds.map((e) => e.id).sort()).toEqual(["lost", "other"]);
        await b.ledger.release("lost", "never signed", Date.now());
        expect((await b.ledger.get("lost"))?.state).toBe("released");
        expect((await b.ledger.usage("acme", then)).daily).toBe(0n);
      } finally {
        await b.close();
      }
    } finally {
      admin.disconnect();
      await a.close();
    }
  });
});

describe("Redis Cluster: upgrading a ledger from the shared layout", () => {
  const entry = (id: string, tenant: string, amount: string, extra: Record<string, unknown> = {}) => ({
    id,
    tenant,
    route: "/r",
    fingerprint: "f",
    amount,
    asset: "a",
    network: "n",
    payee: "p",
    ...extra,
  });

  it("refuses the old ledger until `tollgate state migrate` moved it, then reads and settles it exactly", async () => {
    const p = prefix();
    const now = Date.now();
    // The previous version: every ledger key under the one {ledger} tag.
    const before = redisStores({ cluster: cluster.nodes }, { prefix: p, ledgerLayout: "shared" });
    const admin = new Cluster(cluster.nodes, { lazyConnect: false });
    try {
      const limits = { daily: 100n, monthly: 1000n, total: 5000n };
      const signature = { nonce: "0x1", validBefore: Math.floor(now / 1000) + 60, payer: "0xpayer" };
      expect((await before.ledger.reserve(entry("paid", "acme", "30", signature), limits, now)).ok).toBe(true);
      await before.ledger.commit("paid", "0xtx", now);
      expect((await before.ledger.reserve(entry("held", "acme", "40"), limits, now)).ok).toBe(true);
      expect(
        (
          await before.ledger.reserve(
            entry("credit", "globex", "7", { kind: "credits", resource: "sandbox:s1", meter: "minute" }),
            limits,
            now,
          )
        ).ok,
      ).toBe(true);
      expect((await before.ledger.reserve(entry("gone", "globex", "5"), limits, now)).ok).toBe(true);
      await before.ledger.release("gone", "upstream refused", now);
      const oldList = await before.ledger.list({});
      const oldUsage = { acme: await before.ledger.usage("acme", now), globex: await before.ledger.usage("globex", now) };
      expect(await admin.exists(`${p}{ledger}:e:paid`)).toBe(1);
      await before.close();

      // The new version refuses the unmoved ledger (budgets would start again from zero): fail closed.
      const early = redisStores({ cluster: cluster.nodes }, { prefix: p });
      try {
        await expect(early.ledger.reserve(entry("new", "acme", "1"), limits, now)).rejects.toBeInstanceOf(StateUnavailableError);
        await expect(early.ledger.usage("acme", now)).rejects.toThrow(/tollgate state migrate/);
      } finally {
        await early.close();
      }

      // The command, as an operator runs it, with the gateway's config file.
      const dir = await mkdtemp(join(tmpdir(), "tollgate-migrate-"));
      const file = join(dir, "tollgate.toml");
      const nodes = cluster.nodes.map((n) => `"${n.host}:${n.port}"`).join(", ");
      await writeFile(file, `[state]\nbackend = "redis"\nclusterNodes = [${nodes}]\n`);
      const cli = () => run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "state", "migrate", "--config", file]);
      try {
        const { migrateLedgerToTenantLayout } = await import("../../src/state/redis-migrate.js");
        const moving = redisStores({ cluster: cluster.nodes }, { prefix: p });
        try {
          expect(await migrateLedgerToTenantLayout(moving.connection)).toEqual({ entries: 4, counters: 9, tenants: 2, already: false });
          expect((await migrateLedgerToTenantLayout(moving.connection)).already).toBe(true);
        } finally {
          await moving.close();
        }
        // The command line on a Redis that has nothing left to move (the default prefix): it says so, exit 0.
        expect((await cli()).stdout).toMatch(/Moved 0 ledger entries|already/);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }

      const after = redisStores({ cluster: cluster.nodes }, { prefix: p });
      try {
        // Every entry as it was (the order of entries made in the same millisecond aside).
        const byId = (l: { id: string }[]) => [...l].sort((a, b) => a.id.localeCompare(b.id));
        expect(byId(await after.ledger.list({}))).toEqual(byId(oldList));
        expect(await after.ledger.usage("acme", now)).toEqual(oldUsage.acme);
        expect(await after.ledger.usage("globex", now)).toEqual(oldUsage.globex);
        expect((await after.ledger.get("paid"))?.transaction).toBe("0xtx");
        expect((await after.ledger.list({ resource: "sandbox:s1" })).map((e) => e.id)).toEqual(["credit"]);
        // The hold left by the old version is the reconciler's, found through the tenant's holds.
        expect((await after.ledger.expiredHolds(now + 11 * 60_000, 10)).map((e) => e.id)).toEqual(["held"]);
        expect((await after.ledger.expiredCreditHolds(now + 11 * 60_000, 10)).map((e) => e.id)).toEqual(["credit"]);
        // Settling it moves the migrated counters: 30 committed + 40 held = 70 of 100; released, 30.
        await after.ledger.release("held", "reconciled", now);
        expect((await after.ledger.usage("acme", now)).daily).toBe(30n);
        // The budget goes on from what was spent before: 30 + 71 > 100 is refused, 70 fits.
        const over = await after.ledger.reserve(entry("big", "acme", "71"), limits, now);
        expect(over.ok).toBe(false);
        expect((await after.ledger.reserve(entry("fits", "acme", "70"), limits, now)).ok).toBe(true);
        expect((await after.ledger.usage("acme", now)).daily).toBe(100n);
        // Newest first still: the new entry's sequence follows the migrated ones.
        expect((await after.ledger.list({ tenant: "acme", limit: 1 }))[0]?.id).toBe("fits");
      } finally {
        await after.close();
      }
    } finally {
      admin.disconnect();
    }
  }, 60_000);
});

describe("Redis Cluster with a replica per shard: money writes confirmed by WAIT", () => {
  let withReplicas: RedisClusterSet;
  beforeAll(async () => {
    withReplicas = await startRedisCluster({ replicas: 1 });
  }, 60_000);
  afterAll(async () => {
    await withReplicas?.stop();
  });
  const entry = (id: string) => ({ id, tenant: "t1", route: "/r", fingerprint: "f", amount: "5", asset: "a", network: "n", payee: "p" });

  it("confirms each ledger write and idempotency claim on the shard's replica, and fails closed when it cannot", async () => {
    const p = prefix();
    const stores = redisStores({ cluster: withReplicas.nodes }, { prefix: p, confirmReplicas: 1, confirmTimeoutMs: 1000 });
    const admin = new Cluster(withReplicas.nodes, { lazyConnect: false });
    try {
      expect((await stores.ledger.reserve(entry("w1"), { daily: 100n }, Date.now())).ok).toBe(true);
      await stores.ledger.commit("w1", "0xtx", Date.now());
      expect(await stores.idempotency.begin("k1", "fp", 60_000)).toEqual({ state: "new" });
      // The shard's replica holds the committed entry already (WAIT returned only once it had it).
      const key = `${p}{t:t1}:ledger:e:w1`;
      const slot = Number(await admin.cluster("KEYSLOT", key));
      const ranges = await admin.cluster("SLOTS");
      const primaryPort = ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
      const primary = new Redis({ host: "127.0.0.1", port: primaryPort });
      const replicaPort = Number(/slave0:ip=[^,]+,port=(\d+)/.exec(await primary.info("replication"))![1]);
      primary.disconnect();
      const replica = new Redis({ host: "127.0.0.1", port: replicaPort });
      try {
        await replica.call("READONLY");
        expect(await replica.hget(key, "state")).toBe("committed");
      } finally {
        replica.disconnect();
      }

      // Asking for more replicas than the shard has: the write cannot be confirmed, so the call fails closed.
      const greedy = redisStores({ cluster: withReplicas.nodes }, { prefix: p, confirmReplicas: 2, confirmTimeoutMs: 300 });
      try {
        await expect(greedy.ledger.reserve(entry("w2"), { daily: 100n }, Date.now())).rejects.toBeInstanceOf(StateUnavailableError);
        await expect(greedy.ledger.reserve(entry("w3"), { daily: 100n }, Date.now())).rejects.toThrow(/reached 1 of 2 replicas/);
      } finally {
        await greedy.close();
      }
    } finally {
      admin.disconnect();
      await stores.close();
    }
  }, 60_000);
});

describe("Redis Cluster: ownership sharded by tenant", () => {
  const primaryOf = async (admin: Cluster, key: string) => {
    const slot = Number(await admin.cluster("KEYSLOT", key));
    const ranges = await admin.cluster("SLOTS");
    return { slot, port: ranges.find(([from, to]) => slot >= from && slot <= to)![2][1] as number };
  };

  it("spreads owner records and tenants' lists over the primaries, and keeps tenants apart", async () => {
    const p = prefix();
    const a = redisStores({ cluster: cluster.nodes }, { prefix: p });
    const b = redisStores({ cluster: cluster.nodes }, { prefix: p });
    const admin = new Cluster(cluster.nodes, { lazyConnect: false });
    try {
      const tenants = Array.from({ length: 12 }, (_, i) => `tenant-${i}`);
      for (const [i, t] of tenants.entries())
        for (let j = 0; j < 4; j++) expect(await a.ownership.claim("sandbox", `sb-${i}-${j}`, t)).toBe(true);
      // Records by resource, lists by tenant: both over the three primaries; two tenants' keys on different slots.
      const recordPrimaries = new Set<number>();
      for (const [i] of tenants.entries())
        for (let j = 0; j < 4; j++) recordPrimaries.add((await primaryOf(admin, `${p}own:sandbox:sb-${i}-${j}`)).port);
      expect(recordPrimaries.size).toBe(3);
      const tenantSlots = await Promise.all(tenants.map((t) => primaryOf(admin, `${p}{t:${t}}:own:list:sandbox`)));
      expect(new Set(tenantSlots.map((s) => s.port)).size).toBe(3);
      expect(tenantSlots[0]!.slot).not.toBe(tenantSlots[1]!.slot);
      expect(await admin.exists(`${p}{own}:seq`)).toBe(0);

      // Another instance reads them: owners, lists newest first, counts, records.
      expect(await b.ownership.owner("sandbox", "sb-3-2")).toBe("tenant-3");
      expect(await b.ownership.list("sandbox", "tenant-3")).toEqual(["sb-3-3", "sb-3-2", "sb-3-1", "sb-3-0"]);
      expect(await b.ownership.activeCount("sandbox", "tenant-3")).toBe(4);
      // Isolation: another tenant's id is never taken over, never listed, never counted.
      expect(await b.ownership.claim("sandbox", "sb-3-2", "tenant-4")).toBe(false);
      expect(await a.ownership.owner("sandbox", "sb-3-2")).toBe("tenant-3");
      expect(await b.ownership.list("sandbox", "tenant-4")).toEqual(["sb-4-3", "sb-4-2", "sb-4-1", "sb-4-0"]);
      expect(await b.ownership.activeCount("sandbox", "tenant-4")).toBe(4);
      // A list that names another tenant's resource (a step lost in a crash, a hand edit) does not show it.
      await admin.zadd(`${p}{t:tenant-4}:own:list:sandbox`, 999, "sb-3-2");
      expect((await b.ownership.records("sandbox", "tenant-4")).map((r) => r.id)).toEqual(["sb-4-3", "sb-4-2", "sb-4-1", "sb-4-0"]);

      // Ending goes to the owner's sets, from an instance that knows nothing of the resource.
      await b.ownership.noteStatus("sandbox", "sb-3-1", "running");
      await b.ownership.setActive("sandbox", "sb-3-0", false);
      expect(await a.ownership.activeCount("sandbox", "tenant-3")).toBe(3);
      expect(await a.ownership.records("sandbox", "tenant-3")).toEqual([
        { id: "sb-3-3", active: true },
        { id: "sb-3-2", active: true },
        { id: "sb-3-1", active: true, status: "running" },
        { id: "sb-3-0", active: false },
      ]);
      await a.ownership.setActive("sandbox", "sb-3-0", true);
      await a.ownership.setActive("sandbox", "sb-3-0", true);
      expect(await b.ownership.activeCount("sandbox", "tenant-3")).toBe(4);
    } finally {
      admin.disconnect();
      await a.close();
      await b.close();
    }
  });

  it("gives an id claimed at once by two tenants on two instances to exactly one, listed only by it", async () => {
    const p = prefix();
    const a = redisStores({ cluster: cluster.nodes }, { prefix: p });
    const b = redisStores({ cluster: cluster.nodes }, { prefix: p });
    try {
      const ids = Array.from({ length: 40 }, (_, i) => `race-${i}`);
      const won = await Promise.all(
        ids.map(async (id) => {
          const [x, y] = await Promise.all([a.ownership.claim("session", id, "red"), b.ownership.claim("session", id, "blue")]);
          expect(x !== y).toBe(true);
          return x ? "red" : "blue";
        }),
      );
      for (const t of ["red", "blue"]) {
        const mine = ids.filter((_, i) => won[i] === t);
        expect((await a.ownership.list("session", t)).sort()).toEqual(mine.sort());
        expect(await b.ownership.activeCount("session", t)).toBe(mine.length);
        for (const id of mine) expect(await b.ownership.owner("session", id)).toBe(t);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("forgets an ended resource after the retention, and lets it be claimed anew", async () => {
    const p = prefix();
    const s = redisStores({ cluster: cluster.nodes }, { prefix: p, endedRetentionMs: 300 });
    try {
      await s.ownership.claim("session", "gone", "t1");
      await s.ownership.claim("session", "kept", "t1");
      await s.ownership.setActive("session", "gone", false);
      await new Promise((r) => setTimeout(r, 500));
      expect(await s.ownership.owner("session", "gone")).toBeUndefined();
      expect(await s.ownership.list("session", "t1")).toEqual(["kept"]);
      expect(await s.ownership.claim("session", "gone", "t2")).toBe(true);
      expect(await s.ownership.list("session", "t2")).toEqual(["gone"]);
      expect(await s.ownership.list("session", "t1")).toEqual(["kept"]);
    } finally {
      await s.close();
    }
  });
});

describe("Redis Cluster: upgrading ownership from the shared layout", () => {
  it("refuses the old {own} ownership until `tollgate state migrate` moved it, then answers exactly as before", async () => {
    const p = prefix();
    // The previous version: every ownership key under the one {own} tag.
    const before = redisStores({ cluster: cluster.nodes }, { prefix: p, ownershipLayout: "shared", endedRetentionMs: 3_600_000 });
    const admin = new Cluster(cluster.nodes, { lazyConnect: false });
    try {
      for (const id of ["a1", "a2", "a3"]) await before.ownership.claim("sandbox", id, "acme");
      await before.ownership.claim("session", "s1", "acme");
      for (const id of ["g1", "g2"]) await before.ownership.claim("sandbox", id, "globex");
      await before.ownership.noteStatus("sandbox", "a2", "running");
      await before.ownership.setActive("sandbox", "a1", false);
      await before.ownership.setActive("sandbox", "g2", false);
      const snapshot = async (o: typeof before.ownership) => ({
        owners: await Promise.all(["a1", "a2", "a3", "g1", "g2", "zz"].map((id) => o.owner("sandbox", id))),
        session: await o.owner("session", "s1"),
        acme: await o.records("sandbox", "acme"),
        acmeSessions: await o.list("session", "acme"),
        globex: await o.records("sandbox", "globex"),
        counts: [await o.activeCount("sandbox", "acme"), await o.activeCount("sandbox", "globex"), await o.activeCount("session", "acme")],
      });
      const old = await snapshot(before.ownership);
      expect(old.counts).toEqual([2, 1, 1]);
      expect(await admin.exists(`${p}{own}:sandbox:a1`)).toBe(1);
      await before.close();

      // The new version refuses it (every owned resource would answer 404, every id could be taken over): fail closed.
      const early = redisStores({ cluster: cluster.nodes }, { prefix: p });
      try {
        await expect(early.ownership.owner("sandbox", "a1")).rejects.toBeInstanceOf(StateUnavailableError);
        await expect(early.ownership.claim("sandbox", "a1", "globex")).rejects.toThrow(/tollgate state migrate/);
      } finally {
        await early.close();
      }

      const { migrateOwnershipToTenantLayout } = await import("../../src/state/redis-migrate-ownership.js");
      const moving = redisStores({ cluster: cluster.nodes }, { prefix: p });
      try {
        expect(await migrateOwnershipToTenantLayout(moving.connection)).toEqual({ resources: 6, tenants: 2, already: false });
        expect((await migrateOwnershipToTenantLayout(moving.connection)).already).toBe(true);
        // A run cut short before its marker (some keys copied, some not): the next run finishes it, writing the same.
        await admin.del(`${p}ownership-layout`);
        await admin.del(`${p}own:sandbox:a3`);
        await admin.del(`${p}{t:globex}:own:list:sandbox`);
        const refused = redisStores({ cluster: cluster.nodes }, { prefix: p });
        try {
          await expect(refused.ownership.list("sandbox", "acme")).rejects.toThrow(/tollgate state migrate/);
        } finally {
          await refused.close();
        }
        expect(await migrateOwnershipToTenantLayout(moving.connection)).toEqual({ resources: 6, tenants: 2, already: false });
      } finally {
        await moving.close();
      }
      // An ended record keeps its time to live.
      const pttl = await admin.pttl(`${p}own:sandbox:a1`);
      expect(pttl).toBeGreaterThan(3_500_000);
      expect(pttl).toBeLessThanOrEqual(3_600_000);
      expect(await admin.pttl(`${p}own:sandbox:a2`)).toBe(-1);

      const after = redisStores({ cluster: cluster.nodes }, { prefix: p, endedRetentionMs: 3_600_000 });
      try {
        expect(await snapshot(after.ownership)).toEqual(old);
        // No takeover of a migrated id; new claims sort above the migrated ones; ending works on migrated records.
        expect(await after.ownership.claim("sandbox", "a2", "globex")).toBe(false);
        expect(await after.ownership.claim("sandbox", "a4", "acme")).toBe(true);
        expect((await after.ownership.list("sandbox", "acme"))[0]).toBe("a4");
        await after.ownership.setActive("sandbox", "a3", false);
        expect(await after.ownership.activeCount("sandbox", "acme")).toBe(2);
        // The migrated ended set: its retention end moved with it.
        expect(await admin.zcard(`${p}{t:acme}:own:ended`)).toBe(2);
      } finally {
        await after.close();
      }
    } finally {
      admin.disconnect();
    }
  }, 60_000);
});
