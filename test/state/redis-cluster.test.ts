// The state contract on a real three-primary Redis Cluster (redis-server --cluster-enabled yes, joined with
// redis-cli --cluster create): every multi-key script must find its keys on one slot, which the hash-tagged key
// groups ensure, while single-key values spread over the shards.
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StateUnavailableError } from "../../src/state/errors.js";
import { redisStores } from "../../src/state/redis.js";
import { stateContract } from "./contract.js";
import { type RedisClusterSet, startRedisCluster } from "./redis-ha.js";

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
        const group = /^[^:]+:\{(\w+)\}:/.exec(key)?.[1];
        if (!group) continue;
        if (!groups.has(group)) groups.set(group, new Set());
        groups.get(group)!.add(await slotOf(key));
      }
      expect([...groups.keys()].sort()).toEqual(["ledger", "own"]);
      for (const slots of groups.values()) expect(slots.size).toBe(1);
      const kvNodes = new Set(keys.filter((k) => k.includes(":kv:")).map((k) => k.slice(0, k.indexOf("|"))));
      expect(kvNodes.size).toBe(3);
    } finally {
      admin.disconnect();
      await stores.close();
    }
  });
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
      const key = `${p}{ledger}:e:w1`;
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
