// The stand-ins the Worker bundle swaps in (wrangler.toml [alias], deploy/worker-shims/): the LRU cache answers as
// lru-cache does, driven through the same operations with the options the gateway uses (a fixed clock moved by hand
// for the ttl ones); the others refuse by name what the Worker never does.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LRUCache as Real } from "lru-cache";
import { LRUCache as Shim } from "../../deploy/worker-shims/lru-cache.js";
// @ts-expect-error plain JS without declarations: the Worker's stand-ins
import Ajv from "../../deploy/worker-shims/ajv.js";
// @ts-expect-error plain JS without declarations
import { zodToJsonSchema } from "../../deploy/worker-shims/zod-to-json-schema.js";
// @ts-expect-error plain JS without declarations
import { object as zod3Object } from "../../deploy/worker-shims/zod-v3.js";

type Options = ConstructorParameters<typeof Real<string, string>>[0];

/** A small deterministic PRNG, so a failure replays. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Runs the same random operations on both and compares every answer, size and calculatedSize after each. */
function compare(make: (clock: { now: () => number }) => Options, opts: { keys: number; ops: number; ttlSets?: boolean; seed: number }) {
  let now = 1_000;
  const clock = { now: () => now };
  const real = new Real<string, string>(make(clock));
  const shim = new Shim<string, string>(make(clock));
  const rand = prng(opts.seed);
  for (let i = 0; i < opts.ops; i++) {
    const key = `k${Math.floor(rand() * opts.keys)}`;
    const r = rand();
    let a: unknown;
    let b: unknown;
    let op: string;
    if (r < 0.4) {
      op = "get";
      [a, b] = [real.get(key), shim.get(key)];
    } else if (r < 0.5) {
      op = "has";
      [a, b] = [real.has(key), shim.has(key)];
    } else if (r < 0.85) {
      const value = "v".repeat(1 + Math.floor(rand() * 300));
      const ttl = opts.ttlSets ? Math.floor(rand() * 50) : undefined;
      op = `set ${value.length}${ttl === undefined ? "" : ` ttl ${ttl}`}`;
      real.set(key, value, ttl === undefined ? undefined : { ttl });
      shim.set(key, value, ttl === undefined ? undefined : { ttl });
    } else if (r < 0.95) {
      op = "delete";
      [a, b] = [real.delete(key), shim.delete(key)];
    } else if (r < 0.99) {
      op = "tick";
      now += Math.floor(rand() * 30);
    } else {
      op = "clear";
      real.clear();
      shim.clear();
    }
    const where = `op ${i}: ${op} ${key}`;
    expect(b, where).toEqual(a);
    expect(shim.size, where).toBe(real.size);
    expect(shim.calculatedSize, where).toBe(real.calculatedSize);
  }
}

describe("the Worker's lru-cache stand-in", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("evicts the least recently used past max (tokens, tenants, key usage, policy)", () => {
    for (const seed of [1, 2, 3]) compare(() => ({ max: 16 }), { keys: 40, ops: 3000, seed });
  });

  it("evicts by size past maxSize, refusing entries over maxEntrySize (search cache, parsed bodies, body check)", () => {
    const size = (v: string, k: string) => v.length + k.length;
    for (const seed of [4, 5]) {
      compare(() => ({ max: 64, maxSize: 2_000, sizeCalculation: size }), { keys: 100, ops: 3000, seed });
      compare(() => ({ maxSize: 1_500, sizeCalculation: size, maxEntrySize: 200 }), { keys: 60, ops: 3000, seed });
    }
  });

  it("expires entries after their ttl on the given clock, per entry and by default (the memory store)", () => {
    for (const seed of [6, 7, 8]) {
      compare((clock) => ({ ttl: 40, ttlAutopurge: true, ttlResolution: 0, perf: clock }), { keys: 30, ops: 3000, ttlSets: true, seed });
    }
  });

  it("purges an entry whose ttl has passed on its own timer (ttlAutopurge)", () => {
    let now = 5_000;
    const shim = new Shim<string, string>({ ttl: 100, ttlAutopurge: true, ttlResolution: 0, perf: { now: () => now } });
    shim.set("a", "1");
    shim.set("b", "2", { ttl: 0 });
    now += 101;
    vi.advanceTimersByTime(200);
    expect(shim.size).toBe(1);
    expect(shim.get("b")).toBe("2");
  });

  it("refuses options lru-cache refuses", () => {
    expect(() => new Shim({} as never)).toThrow(TypeError);
    expect(() => new Shim({ maxSize: 10 } as never)).toThrow(TypeError);
  });
});

describe("the Worker's other stand-ins", () => {
  it("refuse by name what the Worker never does", () => {
    const ajv = new Ajv();
    expect(ajv.getSchema("x")).toBeUndefined();
    expect(() => ajv.compile({ type: "object" })).toThrow(/not available in the Worker/);
    expect(() => zodToJsonSchema()).toThrow(/Zod 3/);
    expect(() => zod3Object({})).toThrow(/Zod 3/);
  });
});
