// The fixed-window rate limiter over any KeyValueStore: one counter per key and window, created with a ttl just past the
// window's end. The memory and Durable Object backends use it as it is (Redis runs the same count in one script).
import { stateKeys } from "./keys.js";
import type { KeyValueStore, RateLimiter, RateLimitResult } from "./types.js";

export class FixedWindowRateLimiter implements RateLimiter {
  constructor(private readonly kv: KeyValueStore) {}

  async hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult> {
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const n = await this.add(key, 1, windowMs, now);
    return { allowed: n <= limit, limit, remaining: Math.max(0, limit - n), resetAt: windowStart + windowMs };
  }

  add(key: string, n: number, windowMs: number, now: number): Promise<number> {
    const windowStart = Math.floor(now / windowMs) * windowMs;
    return this.kv.incrBy(stateKeys.rateWindow(key, windowStart), n, windowMs + 1000);
  }
}
