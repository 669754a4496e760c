// The state contract on a real three-primary Redis Cluster (redis-server --cluster-enabled yes, joined with
// redis-cli --cluster create): every multi-key script must find its keys on one slot, which the hash-tagged key
// groups ensure, while single-key values spread over the shards.
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
