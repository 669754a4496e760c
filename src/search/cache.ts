// Paid answers kept for reuse (bounded in bytes), and in-flight calls shared by identical concurrent requests.
import { LRUCache } from "lru-cache";
import type { Answer } from "./answer.js";

/**
 * Answers by cache key, bounded in bytes, each reused for `ttlSeconds` from when it was fetched (its `storedAt`, on the
 * gateway's clock): the age is checked on read, where the caller's max age is checked too. (lru-cache's own TTL would
 * read its clock and arm a timer every millisecond of a busy cache's reads; an expired entry here is dropped when read,
 * or evicted by size like any other.)
 */
export class AnswerCache {
  private readonly lru: LRUCache<string, Answer>;
  private readonly ttlMs: number;

  constructor(opts: { maxBytes: number; ttlSeconds: number }) {
    this.ttlMs = Math.max(1, opts.ttlSeconds) * 1000;
    this.lru = new LRUCache<string, Answer>({
      maxSize: opts.maxBytes,
      sizeCalculation: (a) => Math.max(1, a.body.byteLength + 256),
      // Entries larger than a quarter of the cache would evict everything else.
      maxEntrySize: Math.max(1, Math.floor(opts.maxBytes / 4)),
    });
  }

  /** A cached answer fetched within the TTL, and no older than maxAgeMs (when given). */
  get(key: string, now: number, maxAgeMs?: number): Answer | undefined {
    const a = this.lru.get(key);
    if (!a) return undefined;
    const age = now - a.storedAt;
    if (age > this.ttlMs) {
      this.lru.delete(key);
      return undefined;
    }
    if (maxAgeMs !== undefined && age > maxAgeMs) return undefined;
    return a;
  }

  set(key: string, a: Answer): void {
    this.lru.set(key, a);
  }

  get bytes(): number {
    return this.lru.calculatedSize;
  }
}

/**
 * Runs one call per key at a time; concurrent callers with the same key get the leader's result. With `shared` false
 * (Workers: GatewayDeps.sharedWaits) every caller runs its own call, which joins the leader's through the fleet's claim
 * on its own state calls: workerd may cancel, as hung, a request waiting on a promise another request's I/O settles.
 */
export class Coalescer<T> {
  private readonly inflight = new Map<string, Promise<T>>();

  constructor(private readonly shared = true) {}

  /** `leader` is true for the caller whose `run` actually executed. */
  async run(key: string, run: () => Promise<T>): Promise<{ value: T; leader: boolean }> {
    if (!this.shared) return { value: await run(), leader: true };
    const existing = this.inflight.get(key);
    if (existing) return { value: await existing, leader: false };
    const p = run();
    this.inflight.set(key, p);
    try {
      return { value: await p, leader: true };
    } finally {
      this.inflight.delete(key);
    }
  }

  get size(): number {
    return this.inflight.size;
  }
}
