// Three gateway instances on one real redis-server, one tenant limited to 600 requests a minute, one and a half times that sent
// at all three at once: the fleet admits at least the limit (a refusal is never wrong) and at most the documented
// bound above it, 3 × ⌈600 / 50⌉ − 1 = 35 (docs/rate-limits.md#the-bound); then the same with the state 20 ms away
// (a TCP proxy adding the round trip), where each instance decides many requests per batch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDelayProxy, type DelayProxy } from "../helpers/delay-proxy.js";
import { fleetRateLimitRun, type FleetRateLimitRun } from "../helpers/fleet-rate-limit.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

describe("the rate limit across a fleet on one Redis", () => {
  let redis: RedisServer;
  let proxy: DelayProxy;

  beforeAll(async () => {
    redis = await startRedisServer();
    proxy = await startDelayProxy("127.0.0.1", redis.port);
  });
  afterAll(async () => {
    await proxy?.close();
    await redis?.stop();
  });

  const check = (run: FleetRateLimitRun) => {
    console.log(
      `rate limit fleet: ${run.instances} instances, limit ${run.limit}: ${run.admitted} admitted of ${run.sent} (overshoot ${run.overshoot}, bound ${run.bound}) in ${run.ms.toFixed(0)} ms`,
    );
    expect(run.other).toBe(0);
    expect(run.admitted).toBeGreaterThanOrEqual(run.limit);
    expect(run.overshoot).toBeLessThanOrEqual(run.bound);
    expect(run.bound).toBe(35);
  };

  it("admits between the limit and the limit + 35 with Redis near", async () => {
    check(await fleetRateLimitRun({ redisUrl: redis.url, instances: 3, limit: 600, perInstance: 300, concurrency: 12 }));
  }, 120_000);

  it("admits between the limit and the limit + 35 with Redis 20 ms away", async () => {
    proxy.setRtt(20);
    check(await fleetRateLimitRun({ redisUrl: proxy.url, instances: 3, limit: 600, perInstance: 300, concurrency: 24 }));
  }, 120_000);
});
