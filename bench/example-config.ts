// The configuration the CPU benches measure: config/tollgate.example.toml as an operator starts from it, with only what a
// bench must change. Each change, and why:
// - `server`: listens on 127.0.0.1 and a free port; the log level is the bench's (default "info": one line a request);
//   no `publicOrigin` (the example's is a placeholder host: the URLs the gateway hands out name the one it listens on).
// - `upstream`: the bench's upstream (the emulator or the trivial one) instead of the real service.
// - `state`: the bench's backend (memory, said to be a rehearsal as the example does, a local redis-server, or the
//   Worker's Durable Objects).
// - `tenants`: the example's first tenant (its quotas, budget, payment policy, alerts; request logs on by default) under
//   the bench's own key; its rate limit is raised from 600 a minute to 6,000,000, as a bench sends thousands a second:
//   every request is still counted by the rate limiter and admitted, so what is measured is the limiter's cost, not its
//   refusals. The example's admin tenant ("ops") under a key of its own.
// Everything else (payments, credits and their prices, cache, tokens, OAuth, alerts, tracing's service name, CORS, the
// direct relay) stays as the file has it.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";

const FILE = fileURLToPath(new URL("../config/tollgate.example.toml", import.meta.url));

/** Requests a minute the bench's tenant may make: far above any bench's rate, so the limiter counts and admits all. */
export const BENCH_REQUESTS_PER_MINUTE = 6_000_000;

export interface BenchConfigOptions {
  /** The upstream's control plane, and the runtime hosts it may hand out. */
  upstream: { baseUrl: string; allowedHosts: string[] };
  /** The bench tenant's key hash (`hashTenantKey`). */
  keyHash: string;
  /** The admin tenant's key hash. */
  adminKeyHash: string;
  logLevel?: string;
  /** Memory (default), a redis-server's URL, or the Worker's Durable Objects. */
  redisUrl?: string;
  durableObjects?: boolean;
  /** On Workers: no `server.host`, `port` or `drainSeconds` (the platform listens and drains). */
  worker?: boolean;
}

/** The example configuration with the bench's changes (above), as the gateway's config loader takes it. */
export function exampleBenchConfig(o: BenchConfigOptions): Record<string, unknown> {
  const file = parse(readFileSync(FILE, "utf8")) as Record<string, any>;
  const [tenant, admin] = file.tenants as Array<Record<string, any>>;
  const { publicOrigin: _placeholder, ...listed } = file.server as Record<string, unknown>;
  const server: Record<string, unknown> = { ...listed, logLevel: o.logLevel ?? "info" };
  if (o.worker) {
    delete server.host;
    delete server.port;
    delete server.drainSeconds;
  } else Object.assign(server, { host: "127.0.0.1", port: 0 });
  const state = o.durableObjects
    ? { backend: "durable-objects" }
    : o.redisUrl
      ? { backend: "redis", redisUrl: o.redisUrl }
      : { backend: "memory", rehearsal: true };
  return {
    ...file,
    server,
    upstream: { ...file.upstream, ...o.upstream },
    state,
    tenants: [
      {
        ...tenant,
        id: "bench",
        keys: [{ hash: o.keyHash }],
        quotas: { ...tenant!.quotas, requestsPerMinute: BENCH_REQUESTS_PER_MINUTE },
      },
      { ...admin, keys: [{ hash: o.adminKeyHash }] },
    ],
  };
}
