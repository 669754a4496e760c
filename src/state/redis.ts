// Redis state backend, for several Node gateway instances sharing budgets, ownership, tokens and rate limits.
// Every operation that reads then writes is one Lua script (./redis-scripts.ts). An outage fails closed: calls reject
// with StateUnavailableError at once instead of queueing, hanging or pretending to succeed.
import { RedisAccountSlots } from "./redis-account-slots.js";
import { RedisConnection, type RedisStoresOptions, type RedisTarget } from "./redis-connection.js";
import { RedisLedger } from "./redis-ledger.js";
import { RedisDueIndex, RedisIdempotency, RedisKeyValue, RedisOwnership, RedisRateLimiter } from "./redis-maps.js";
import { RedisTenantOwnership } from "./redis-ownership.js";
import { RedisAuditLog, RedisOutbox, RedisRequestLog, RedisTenantStore } from "./redis-operators.js";
import type { StateStores } from "./types.js";

export interface RedisStores extends StateStores {
  connection: RedisConnection;
}

/**
 * State stores on one Redis, a Sentinel-managed primary ({ sentinels, name }) or a Redis Cluster ({ cluster }).
 * Several gateway instances pointed at the same Redis (and prefix) share budgets exactly.
 * @example
 *   const stores = redisStores("redis://127.0.0.1:6379", { prefix: "tollgate:" });
 *   createGateway(config, { secrets, stores });
 */
export function redisStores(target: RedisTarget, opts: RedisStoresOptions = {}): RedisStores {
  const connection = new RedisConnection(target, opts);
  return {
    connection,
    ledger: new RedisLedger(connection),
    ownership: connection.ownershipPerTenant
      ? new RedisTenantOwnership(connection, opts.endedRetentionMs)
      : new RedisOwnership(connection, opts.endedRetentionMs),
    kv: new RedisKeyValue(connection),
    idempotency: new RedisIdempotency(connection),
    rateLimiter: new RedisRateLimiter(connection),
    ping: () => connection.run(async () => void (await connection.client.ping())),
    tenants: new RedisTenantStore(connection),
    audit: new RedisAuditLog(connection),
    outbox: new RedisOutbox(connection),
    requests: new RedisRequestLog(connection),
    accountSlots: new RedisAccountSlots(connection),
    due: new RedisDueIndex(connection),
    close: () => connection.close(),
  };
}
