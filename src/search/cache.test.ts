// AnswerCache: an answer is reused for ttlSeconds from when it was fetched (its storedAt, on the gateway's clock), and
// no longer than a caller's max age; the cache stays within its bytes.
import { describe, expect, it } from "vitest";
import type { Answer } from "./answer.js";
import { AnswerCache } from "./cache.js";

const answer = (storedAt: number, bytes = 100): Answer => ({
  status: 200,
  headers: { "content-type": "application/json" },
  body: new Uint8Array(bytes),
  paid: 5000n,
  storedAt,
});

describe("AnswerCache", () => {
  it("reuses an answer until ttlSeconds after it was fetched, then forgets it", () => {
    const cache = new AnswerCache({ maxBytes: 1 << 20, ttlSeconds: 300 });
    const t0 = 1_000_000;
    cache.set("k", answer(t0));
    expect(cache.get("k", t0)).toBeDefined();
    expect(cache.get("k", t0 + 300_000)).toBeDefined();
    expect(cache.get("k", t0 + 300_001)).toBeUndefined();
    expect(cache.get("k", t0)).toBeUndefined(); // dropped when found expired
    expect(cache.bytes).toBe(0);
  });

  it("counts the age of an answer fetched elsewhere from its fetch, not from when it was kept here", () => {
    const cache = new AnswerCache({ maxBytes: 1 << 20, ttlSeconds: 60 });
    const now = 5_000_000;
    cache.set("fleet", answer(now - 50_000));
    expect(cache.get("fleet", now)).toBeDefined();
    expect(cache.get("fleet", now + 10_001)).toBeUndefined();
  });

  it("answers a caller's max age without dropping the answer for others", () => {
    const cache = new AnswerCache({ maxBytes: 1 << 20, ttlSeconds: 300 });
    cache.set("k", answer(0));
    expect(cache.get("k", 20_000, 10_000)).toBeUndefined();
    expect(cache.get("k", 20_000)).toBeDefined();
    expect(cache.get("k", 20_000, 30_000)).toBeDefined();
  });

  it("treats ttlSeconds 0 as one second, and stays within maxBytes (an entry over a quarter is not kept)", () => {
    const zero = new AnswerCache({ maxBytes: 1 << 20, ttlSeconds: 0 });
    zero.set("k", answer(0));
    expect(zero.get("k", 1000)).toBeDefined();
    expect(zero.get("k", 1001)).toBeUndefined();
    const small = new AnswerCache({ maxBytes: 4096, ttlSeconds: 300 });
    small.set("big", answer(0, 2000));
    expect(small.get("big", 0)).toBeUndefined();
    for (let i = 0; i < 20; i++) small.set(`k${i}`, answer(0, 500));
    expect(small.bytes).toBeLessThanOrEqual(4096);
    expect(small.get("k19", 0)).toBeDefined();
    expect(small.get("k0", 0)).toBeUndefined();
  });
});
