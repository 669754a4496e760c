// The rate limit across Worker instances on Durable Objects, inside workerd: three gateways (three isolates' worth of
// windows) share one namespace of TollgateState objects; a tenant limited to 120 requests a minute gets 300 sent at
// all three at once. The fleet admits at least the limit and at most 3 × ⌈120 / 50⌉ − 1 = 8 above it
// (docs/rate-limits.md#the-bound); every hit it admitted reached the shared counter, behind the answers. The gateways run
// as the Worker entry runs them (sharedWaits: false); the cross-request waits that setting avoids cannot show here, as
// one test is one request to workerd: bench/worker.ts's cache hit (a rate-limited row) runs across window turns.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { doStores } from "../../src/state/durable-client.js";
import { hashTenantKey } from "../../src/identity/tenants.js";

const bindings = env as unknown as Record<string, unknown>;

describe("the rate limit across Worker instances on Durable Objects (workerd)", () => {
  it("admits between the limit and the limit + 8 of 300 requests over three instances", async () => {
    const key = `tg_rl_${crypto.randomUUID()}`;
    const limit = 120;
    const config = parseConfig({
      server: { logLevel: "silent" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      payments: { enabled: false },
      state: { backend: "durable-objects" },
      tenants: [{ id: "busy", keys: [{ hash: await hashTenantKey(key) }], quotas: { requestsPerMinute: limit } }],
    });
    const namespace = `rl-${crypto.randomUUID()}`;
    // A clock a second into a minute, so the window cannot turn during the burst.
    const t0 = Date.now();
    const base = Math.floor(t0 / 60_000) * 60_000 + 60_000 + 1_000;
    const now = () => base + (Date.now() - t0);
    const stores = doStores(bindings, { namespace });
    const gateways = Array.from({ length: 3 }, () =>
      // As the Worker entry runs them: a request that must wait for the fleet's count makes its own state call.
      createGateway(config, {
        secrets: { tokenSecret: "w".repeat(40) },
        stores: doStores(bindings, { namespace }),
        now,
        sharedWaits: false,
      }),
    );
    try {
      const counts = { admitted: 0, refused: 0, other: 0 };
      const worker = async (i: number) => {
        for (let k = 0; k < 25; k++) {
          const r = await gateways[i % 3]!.app.request("/_tollgate/whoami", { headers: { "x-api-key": key } });
          await r.arrayBuffer();
          if (r.status === 200) counts.admitted++;
          else if (r.status === 429) counts.refused++;
          else counts.other++;
        }
      };
      const started = performance.now();
      await Promise.all(Array.from({ length: 12 }, (_, i) => worker(i)));
      const overshoot = counts.admitted - limit;
      console.log(
        `rate limit fleet (workerd, Durable Objects): 3 instances, limit ${limit}: ${counts.admitted} admitted of 300 (overshoot ${overshoot}, bound 8) in ${(performance.now() - started).toFixed(0)} ms`,
      );
      expect(counts.other).toBe(0);
      expect(counts.admitted + counts.refused).toBe(300);
      expect(counts.admitted).toBeGreaterThanOrEqual(limit);
      expect(overshoot).toBeLessThanOrEqual(8);
      // The batches landed behind the answers: the shared counter holds every hit admitted (and a refused one that made
      // its own call).
      let counted = 0;
      for (let i = 0; i < 50 && counted < counts.admitted; i++) {
        counted = await stores.rateLimiter.add("tenant:busy", 0, 60_000, now());
        if (counted < counts.admitted) await new Promise((r) => setTimeout(r, 20));
      }
      expect(counted).toBeGreaterThanOrEqual(counts.admitted);
      expect(counted).toBeLessThanOrEqual(300);
    } finally {
      for (const g of gateways) await g.close(0);
    }
  });
});
