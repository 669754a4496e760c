// The state contract against a real redis-server, plus what only a networked backend can get wrong: two instances
// racing for one budget, and an outage, which must fail closed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StateUnavailableError } from "../../src/state/errors.js";
import { redisStores } from "../../src/state/redis.js";
import type { NewLedgerEntry } from "../../src/state/types.js";
import { stateContract } from "./contract.js";
import { startRedisServer, type RedisServer } from "./redis-server.js";

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

const prefix = () => `t${crypto.randomUUID().slice(0, 8)}:`;

stateContract({
  name: "redis",
  fresh: async () => redisStores(server.url, { prefix: prefix() }),
  retaining: async (ms) => redisStores(server.url, { prefix: prefix(), endedRetentionMs: ms }),
  pair: async () => {
    const p = prefix();
    return [redisStores(server.url, { prefix: p }), redisStores(server.url, { prefix: p })];
  },
});

const entry = (id: string): NewLedgerEntry => ({
  id,
  tenant: "t1",
  route: "/api/web/search",
  fingerprint: "fp",
  amount: "1000",
  asset: "0xUSDC",
  network: "eip155:31337",
  payee: "0xP",
});

describe("Redis backend outages", () => {
  it("rejects with StateUnavailableError at once when Redis goes away, and recovers when it is back", async () => {
    const own = await startRedisServer();
    const stores = redisStores(own.url, { prefix: "down:" });
    try {
      expect((await stores.ledger.reserve(entry("a"), { daily: 10_000n }, Date.now())).ok).toBe(true);
      await own.stop();
      const t0 = performance.now();
      await expect(stores.ledger.reserve(entry("b"), { daily: 10_000n }, Date.now())).rejects.toBeInstanceOf(StateUnavailableError);
      await expect(stores.kv.get("k")).rejects.toThrow(/Redis at 127\.0\.0\.1:\d+ is unavailable/);
      await expect(stores.ledger.commit("a", "0xtx", Date.now())).rejects.toBeInstanceOf(StateUnavailableError);
      expect(performance.now() - t0).toBeLessThan(1000);

      const back = await startRedisServer(own.port);
      try {
        let ok = false;
        for (let i = 0; i < 40 && !ok; i++) {
          ok = await stores.kv.set("k", "v", 1000).then(
            () => true,
            () => false,
          );
          if (!ok) await new Promise((r) => setTimeout(r, 100));
        }
        expect(ok).toBe(true);
        expect((await stores.ledger.reserve(entry("c"), { daily: 10_000n }, Date.now())).ok).toBe(true);
      } finally {
        await back.stop();
      }
    } finally {
      await stores.close();
      await own.stop();
    }
  });

  it("rejects with StateUnavailableError within the connect timeout when Redis was never reachable", async () => {
    const gone = await startRedisServer();
    await gone.stop();
    const stores = redisStores(gone.url, { connectTimeoutMs: 300 });
    try {
      const t0 = performance.now();
      await expect(stores.ledger.reserve(entry("x"), {}, Date.now())).rejects.toBeInstanceOf(StateUnavailableError);
      expect(performance.now() - t0).toBeLessThan(1500);
      await expect(stores.ping()).rejects.toBeInstanceOf(StateUnavailableError);
    } finally {
      await stores.close();
    }
  });

  it("never leaks the password of the Redis URL into its errors", async () => {
    const gone = await startRedisServer();
    await gone.stop();
    const stores = redisStores(`redis://:s3cret-pass@127.0.0.1:${gone.port}`, { connectTimeoutMs: 200 });
    try {
      const err = await stores.kv.get("k").catch((e: Error) => e);
      expect(err).toBeInstanceOf(StateUnavailableError);
      expect(String((err as Error).message)).not.toContain("s3cret");
    } finally {
      await stores.close();
    }
  });
});

describe("Redis ledger written before spend kinds existed", () => {
  it("reads an entry without a kind as x402: get, list by kind, usage and reconciler holds", async () => {
    const stores = redisStores(server.url, { prefix: prefix() });
    try {
      const now = Date.now();
      const signature = { nonce: "0x1", validBefore: Math.floor(now / 1000) - 1, payer: "0xp" };
      expect((await stores.ledger.reserve({ ...entry("old"), ...signature }, {}, now)).ok).toBe(true);
      await stores.connection.client.hdel(stores.connection.key("ledger", "e", "old"), "kind");
      expect(await stores.ledger.get("old")).toMatchObject({ id: "old", kind: "x402", state: "reserved" });
      expect((await stores.ledger.list({ kind: "x402" })).map((e) => e.id)).toEqual(["old"]);
      expect(await stores.ledger.list({ kind: "credits" })).toEqual([]);
      expect((await stores.ledger.usage("t1", now)).byKind.x402.total).toBe(1000n);
      expect((await stores.ledger.expiredHolds(now, 10)).map((e) => e.id)).toEqual(["old"]);
      expect(await stores.ledger.expiredCreditHolds(now + 3_600_000, 10)).toEqual([]);
      await stores.ledger.commit("old", "0xtx", now, 400n);
      expect(await stores.ledger.get("old")).toMatchObject({ kind: "x402", state: "committed", amount: "400", reservedAmount: "1000" });
      expect(await stores.ledger.usage("t1", now)).toMatchObject({
        total: 400n,
        byKind: { x402: { total: 400n }, credits: { total: 0n } },
      });
    } finally {
      await stores.close();
    }
  });
});
