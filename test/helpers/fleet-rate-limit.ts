// A fleet of gateway instances on one Redis, one tenant with a rate limit, and far more requests than it allows sent at
// all of them at once: how many the fleet admitted in the window, against the limit and the documented bound
// (docs/rate-limits.md#the-bound). Shared by test/gateway/rate-limit-fleet.test.ts (which asserts it) and
// `npm run bench -- state` (which prints it).
import { randomBytes } from "node:crypto";
import { parseConfig } from "../../config/load.js";
import { unconfirmedAllowance } from "../../middleware/rate-limit/fleet-windows.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";

export interface FleetRateLimitRun {
  instances: number;
  limit: number;
  sent: number;
  admitted: number;
  refused: number;
  /** Answers neither 200 nor 429 (none expected). */
  other: number;
  /** admitted − limit. */
  overshoot: number;
  /** instances × ⌈limit / 50⌉ − 1: the most the fleet may admit above the limit. */
  bound: number;
  /** Wall time of the burst, ms. */
  ms: number;
}

/**
 * Starts `instances` gateways on `redisUrl` (each its own connection; a fresh tenant each run), sends `perInstance`
 * requests to each (`concurrency` in flight per instance, all instances at once) as one tenant whose limit is `limit`
 * a minute, and counts the answers. The gateways' clock starts a second into a minute, so the window cannot turn
 * during the burst (the burst must take less than 59 s).
 */
export async function fleetRateLimitRun(opts: {
  redisUrl: string;
  instances: number;
  limit: number;
  perInstance: number;
  concurrency: number;
}): Promise<FleetRateLimitRun> {
  const key = generateTenantKey();
  const tenant = `busy-${randomBytes(4).toString("hex")}`; // a fresh counter in a shared Redis
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" }, // never called: /_tollgate/whoami answers from the gateway
    payments: { enabled: false },
    state: { backend: "redis", redisUrl: opts.redisUrl },
    tenants: [{ id: tenant, keys: [{ hash: await hashTenantKey(key) }], quotas: { requestsPerMinute: opts.limit } }],
  });
  const t0 = Date.now();
  const base = Math.floor(t0 / 60_000) * 60_000 + 60_000 + 1_000;
  const now = () => base + (Date.now() - t0);
  const gateways: RunningGateway[] = [];
  try {
    for (let i = 0; i < opts.instances; i++) {
      gateways.push(
        await startNodeGateway({
          config,
          secrets: { upstreamApiKey: `up_${"k".repeat(30)}`, tokenSecret: randomBytes(32).toString("hex") },
          deps: { now },
          logSink: () => {},
        }),
      );
    }
    const counts = { admitted: 0, refused: 0, other: 0 };
    const started = performance.now();
    const worker = async (url: string) => {
      for (let i = 0; i < Math.ceil(opts.perInstance / opts.concurrency); i++) {
        const r = await fetch(`${url}/_tollgate/whoami`, { headers: { "x-api-key": key } });
        await r.arrayBuffer();
        if (r.status === 200) counts.admitted++;
        else if (r.status === 429) counts.refused++;
        else counts.other++;
      }
    };
    await Promise.all(gateways.flatMap((g) => Array.from({ length: opts.concurrency }, () => worker(g.url))));
    const ms = performance.now() - started;
    return {
      instances: opts.instances,
      limit: opts.limit,
      sent: counts.admitted + counts.refused + counts.other,
      ...counts,
      overshoot: counts.admitted - opts.limit,
      bound: opts.instances * unconfirmedAllowance(opts.limit) - 1,
      ms,
    };
  } finally {
    for (const g of gateways) await g.close();
  }
}
