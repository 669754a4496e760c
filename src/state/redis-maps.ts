// The keyed stores on Redis: ownership (hash + per-tenant sorted set and active set), expiring values (PX ttl),
// idempotency keys (a leased pending marker, then the stored response) and the fixed-window rate limiter.
import type { RedisConnection } from "./redis-connection.js";
import type {
  DueIndex,
  IdempotencyBegin,
  IdempotencyStore,
  KeyValueStore,
  LimitedClaim,
  OwnershipRegistry,
  RateLimiter,
  RateLimitResult,
  ResourceKind,
  ResourceOwner,
  StoredResponse,
} from "./types.js";
import { ENDED_RETENTION_MS } from "./types.js";

/** Redis refuses a PX of 0 or less. */
const ttl = (ms: number) => Math.max(1, Math.ceil(ms));

/** How many ended records one list call drops from the indexes at most (the rest on the next calls). */
const PRUNE_BATCH = 200;

export class RedisOwnership implements OwnershipRegistry {
  constructor(
    private readonly r: RedisConnection,
    private readonly retentionMs: number = ENDED_RETENTION_MS,
  ) {}

  private owner_(kind: ResourceKind, id: string) {
    return this.r.key("own", kind, id);
  }
  /** What the scripts prepend to the ownership keys they build. */
  private base() {
    return `${this.r.key("own")}:`.replace(/::$/, ":");
  }
  private ended() {
    return this.r.key("own", "ended");
  }
  private listKey(kind: ResourceKind, tenant: string) {
    return this.r.key("own", "list", kind, "t", tenant);
  }

  async claim(kind: ResourceKind, id: string, tenant: string) {
    return (
      (await this.r.run(() =>
        this.r.client.tgClaim(this.owner_(kind, id), this.r.key("own", "seq"), this.ended(), this.base(), kind, id, tenant),
      )) === 1
    );
  }
  async claimWithin(kind: ResourceKind, id: string, tenant: string, limit: number): Promise<LimitedClaim> {
    const [won, active] = (await this.r.run(() =>
      this.r.client.tgClaimWithin(this.owner_(kind, id), this.r.key("own", "seq"), this.ended(), this.base(), kind, id, tenant, limit),
    )) as [number, number];
    return { outcome: won === 1 ? "claimed" : won === 0 ? "taken" : "full", active };
  }
  async owner(kind: ResourceKind, id: string) {
    return (await this.r.run(() => this.r.client.hget(this.owner_(kind, id), "tenant"))) ?? undefined;
  }
  async ownerRecord(kind: ResourceKind, id: string): Promise<ResourceOwner | undefined> {
    const [tenant, active] = await this.r.run(() => this.r.client.hmget(this.owner_(kind, id), "tenant", "active"));
    return tenant ? { tenant, active: active === "1" } : undefined;
  }
  /** Drops ended records past their retention from the tenants' lists (their hashes expired by themselves). */
  private async prune() {
    await this.r.run(() => this.r.client.tgPruneEnded(this.ended(), this.base(), Date.now(), PRUNE_BATCH));
  }
  async list(kind: ResourceKind, tenant: string) {
    await this.prune();
    return this.r.run(() => this.r.client.zrevrange(this.listKey(kind, tenant), 0, -1));
  }
  async records(kind: ResourceKind, tenant: string) {
    const ids = await this.list(kind, tenant);
    if (ids.length === 0) return [];
    const pipe = this.r.client.pipeline();
    for (const id of ids) pipe.hmget(this.owner_(kind, id), "active", "status");
    const replies = (await this.r.run(() => pipe.exec())) ?? [];
    return ids.map((id, i) => {
      const [active, status] = (replies[i]?.[1] ?? []) as (string | null)[];
      return typeof status === "string" ? { id, active: active === "1", status } : { id, active: active === "1" };
    });
  }
  async noteStatus(kind: ResourceKind, id: string, status: string) {
    await this.r.run(() => this.r.client.tgNoteStatus(this.owner_(kind, id), status));
  }
  async setActive(kind: ResourceKind, id: string, active: boolean) {
    await this.r.run(() =>
      this.r.client.tgSetActive(
        this.owner_(kind, id),
        this.ended(),
        this.base(),
        kind,
        id,
        active ? "1" : "0",
        ttl(this.retentionMs),
        Date.now(),
      ),
    );
  }
  async activeCount(kind: ResourceKind, tenant: string) {
    return this.r.run(() => this.r.client.scard(this.r.key("own", "active", kind, "t", tenant)));
  }
}

export class RedisKeyValue implements KeyValueStore {
  constructor(private readonly r: RedisConnection) {}

  async get(key: string) {
    return (await this.r.run(() => this.r.client.get(this.r.key("kv", key)))) ?? undefined;
  }
  async set(key: string, value: string, ttlMs: number) {
    await this.r.run(() => this.r.client.set(this.r.key("kv", key), value, "PX", ttl(ttlMs)));
  }
  async delete(key: string) {
    await this.r.run(() => this.r.client.del(this.r.key("kv", key)));
  }
  async incrBy(key: string, by: number, ttlMs: number) {
    return Number(await this.r.run(() => this.r.client.tgIncrBy(this.r.key("kv", key), by, ttl(ttlMs))));
  }
  async setIfAbsent(key: string, value: string, ttlMs: number) {
    return (await this.r.run(() => this.r.client.set(this.r.key("kv", key), value, "PX", ttl(ttlMs), "NX"))) === "OK";
  }
}

const PENDING = "pending";

export class RedisIdempotency implements IdempotencyStore {
  constructor(private readonly r: RedisConnection) {}

  async begin(key: string, _fingerprint: string, leaseMs: number): Promise<IdempotencyBegin> {
    // Confirmed like a ledger write: a failover that lost the claim would let a retry pay a second time.
    const v = await this.r.confirmed<string | null>((p) => p.tgBegin(this.r.key("idem", key), PENDING, ttl(leaseMs)));
    if (v === null || v === undefined) return { state: "new" };
    if (v === PENDING) return { state: "pending" };
    return { state: "done", response: JSON.parse(v) as StoredResponse };
  }
  async complete(key: string, response: StoredResponse, ttlMs: number) {
    await this.r.confirmed((p) => p.set(this.r.key("idem", key), JSON.stringify(response), "PX", ttl(ttlMs)));
  }
  async abandon(key: string) {
    await this.r.run(() => this.r.client.del(this.r.key("idem", key)));
  }
}

/** Fixed window: one counter per key and window start, created with a ttl just past the window's end. */
export class RedisRateLimiter implements RateLimiter {
  constructor(private readonly r: RedisConnection) {}

  async hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const n = await this.add(key, 1, windowMs, now);
    return { allowed: n <= limit, limit, remaining: Math.max(0, limit - n), resetAt: windowStart + windowMs };
  }

  async add(key: string, n: number, windowMs: number, now: number): Promise<number> {
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const counter = this.r.key("rl", key, String(windowStart));
    return Number(await this.r.run(() => this.r.client.tgIncrBy(counter, n, windowMs + 1000)));
  }
}

/** Due items: one sorted set per queue, scored by the due time (each command touches one key). */
export class RedisDueIndex implements DueIndex {
  constructor(private readonly r: RedisConnection) {}

  async add(queue: string, id: string, at: number) {
    await this.r.run(() => this.r.client.zadd(this.r.key("due", queue), at, id));
  }
  async due(queue: string, now: number, limit: number) {
    return this.r.run(() => this.r.client.zrangebyscore(this.r.key("due", queue), "-inf", now, "LIMIT", 0, limit));
  }
  async remove(queue: string, id: string) {
    await this.r.run(() => this.r.client.zrem(this.r.key("due", queue), id));
  }
}
