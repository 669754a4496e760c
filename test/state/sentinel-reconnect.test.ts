// A Sentinel client that is reconnecting when the failover is announced must not give up. ioredis (6.0) ends its
// client for good when its failover detector, on +switch-master, disconnects the connector while that connector is
// still asking a sentinel where the primary is; the stores then answered "Connection is closed." until restarted (seen
// under load in failover.test.ts). Here the sentinels sit behind proxies that hold each of their answers back, so a
// reconnect spends most of its time asking them and the announcement lands in the middle of one.
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisStores } from "../../src/state/redis.js";
import { type SentinelSet, startSentinelSet } from "./redis-ha.js";

/** A TCP proxy on 127.0.0.1 to `port` that passes requests at once and each answer `ms` late (in order). */
async function slowAnswers(port: number, ms: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: "127.0.0.1", port });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => setTimeout(() => client.writable && client.write(d), ms));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => setTimeout(() => client.destroy(), ms));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("Sentinel client across a failover announced mid-reconnect", () => {
  let ha: SentinelSet;
  beforeAll(async () => {
    ha = await startSentinelSet({ replicas: 1, downAfterMs: 1000 });
  }, 60_000);
  afterAll(async () => {
    await ha?.stop();
  });

  it("is back on the new primary after the old one is SIGKILLed", async () => {
    const proxies = await Promise.all(ha.sentinels.map((s) => slowAnswers(s.port, 1000)));
    const stores = redisStores(
      { sentinels: proxies.map((p) => ({ host: "127.0.0.1", port: p.port })), name: ha.name },
      { prefix: `r${crypto.randomUUID().slice(0, 8)}:`, connectTimeoutMs: 8000, commandTimeoutMs: 5000 },
    );
    const works = () =>
      stores.kv.set("k", "v", 10_000).then(
        () => true,
        () => false,
      );
    try {
      expect(await works()).toBe(true);
      const old = ha.primary.port;
      await ha.killPrimary();
      const killedAt = Date.now();
      let back = false;
      while (!back && Date.now() - killedAt < 30_000) {
        await new Promise((r) => setTimeout(r, 200));
        back = await works();
      }
      expect(await ha.currentPrimary()).not.toBe(old);
      expect(back).toBe(true);
      // Still there a while later (not a lucky answer in between).
      await new Promise((r) => setTimeout(r, 1000));
      expect(await works()).toBe(true);
    } finally {
      await stores.close();
      await Promise.all(proxies.map((p) => p.close()));
    }
  }, 60_000);
});
