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

describe("zod in the Worker (deploy/worker-shims/zod.js)", () => {
  /** @x402/core's payment schemas built as the Worker builds them: its `zod` import resolved to the stand-in. */
  async function shimmedSchemas() {
    const { build } = await import("esbuild");
    const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
    const { join, resolve } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const out = await build({
      entryPoints: [resolve("node_modules/@x402/core/dist/esm/schemas/index.mjs")],
      bundle: true,
      format: "esm",
      write: false,
      platform: "neutral",
      alias: { zod: resolve("deploy/worker-shims/zod.js") },
    });
    const text = out.outputFiles[0]!.text;
    expect(text).not.toContain("node_modules/@x402/core/node_modules/zod");
    const dir = mkdtempSync(join(tmpdir(), "tollgate-zod-shim-"));
    try {
      const file = join(dir, "schemas.mjs");
      writeFileSync(file, text);
      return await import(file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const requirement = {
    scheme: "exact",
    network: "eip155:84532",
    amount: "5000",
    asset: `0x${"a".repeat(40)}`,
    payTo: `0x${"b".repeat(40)}`,
    maxTimeoutSeconds: 60,
    extra: { name: "USDC", version: "2" },
  };
  const samples: unknown[] = [
    { x402Version: 2, resource: { url: "https://x/y", description: null }, accepts: [requirement] },
    { x402Version: 2, accepts: [requirement], error: "payment required", extensions: { "payment-identifier": {} } },
    { x402Version: 2, resource: { url: "https://x/y", tags: ["a", "b"] }, accepts: [] },
    { x402Version: 2, resource: { url: "https://x/y" }, accepts: [{ ...requirement, network: "base" }] },
    { x402Version: 2, resource: { url: "https://x/y" }, accepts: [{ ...requirement, maxTimeoutSeconds: -1 }] },
    { x402Version: 2, resource: { url: "https://x/y", serviceName: "\u0001" }, accepts: [requirement] },
    {
      x402Version: 1,
      accepts: [{ ...requirement, maxAmountRequired: "5000", resource: "https://x/y", description: "d", network: "base-sepolia" }],
    },
    { x402Version: 1, accepts: [{ scheme: "exact" }] },
    { x402Version: 3, accepts: [requirement] },
    { x402Version: 2, accepted: requirement, payload: { signature: "0x00" }, resource: { url: "https://x/y" } },
    { x402Version: 2, accepted: requirement, payload: "not an object" },
    null,
    "text",
    { x402Version: 2, accepted: { ...requirement, extra: 5 }, payload: {} },
  ];

  it("parses every payment schema of @x402/core as its own Zod 3 does: same success, same value", async () => {
    const real = await import("@x402/core/schemas");
    const shim = await shimmedSchemas();
    const parsers = ["parsePaymentRequired", "parsePaymentRequirements", "parsePaymentPayload"] as const;
    let successes = 0;
    for (const name of parsers)
      for (const sample of samples) {
        const a = (real as any)[name](sample);
        const b = shim[name](sample);
        expect(b.success, `${name} ${JSON.stringify(sample)}`).toBe(a.success);
        if (a.success) {
          successes++;
          expect(b.data).toEqual(a.data);
        }
      }
    expect(successes).toBeGreaterThanOrEqual(3);
  });
});

describe("the `z` the zod stand-in gives @x402", () => {
  it("holds every zod function @x402's packages call", async () => {
    const { readdirSync, readFileSync, statSync } = await import("node:fs");
    const { join } = await import("node:path");
    // @ts-expect-error plain JS without declarations
    const { z } = await import("../../deploy/worker-shims/zod.js");
    const called = new Set<string>();
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (name === "node_modules" || name === "cjs") continue;
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith(".mjs")) for (const m of readFileSync(path, "utf8").matchAll(/\bz\.([a-zA-Z]+)\(/g)) called.add(m[1]!);
      }
    };
    for (const pkg of readdirSync("node_modules/@x402")) walk(join("node_modules/@x402", pkg, "dist", "esm"));
    expect(called.size).toBeGreaterThan(5);
    for (const fn of called) expect(typeof z[fn], `z.${fn}`).toBe("function");
  });
});
