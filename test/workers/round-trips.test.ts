// Durable Object calls per request class inside workerd, and how many of them a request waits for: the Worker's state
// binding is wrapped so that every call on a stub is counted and first waits DELAY ms; a class's fastest latency with
// the delay, less without it, divided by DELAY is the sequential calls on its critical path (the same measure as
// test/state/round-trips.test.ts on Node). Prints one `durable objects <class>: …` line per class.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/platform/worker.js";

const stack = inject("stack");
// Short enough that a paid miss comes back within the tenant snapshot's 750 ms (a sparser caller waits for its check).
const DELAY = 80;
const RUNS = 3;

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The TOLLGATE_STATE binding with every stub call counted and delayed. */
function delayedNamespace(ns: any) {
  const state = { delay: 0, calls: 0 };
  const wrapped = {
    idFromName: (name: string) => ns.idFromName(name),
    get(id: unknown) {
      const stub = ns.get(id);
      return new Proxy(stub, {
        get(t, prop) {
          const v = Reflect.get(t, prop);
          if (typeof v !== "function" || prop === "then") return v;
          // Called as a method of the stub itself (an RPC stub's properties are remote: `v.apply` would be one).
          return async (...args: unknown[]) => {
            state.calls++;
            if (state.delay > 0) await new Promise((r) => setTimeout(r, state.delay));
            return t[prop](...args);
          };
        },
      });
    },
  };
  return { wrapped, state };
}

describe("Durable Object calls per request class (workerd)", () => {
  it("cache hit 0, control read of an own sandbox 0, creation ≤ 1, runtime 0, paid miss ≤ 1 waited for", async () => {
    const key = `tg_worker_${crypto.randomUUID()}`;
    const runtimePort = new URL(stack.runtimeUrl).port;
    const { wrapped, state } = delayedNamespace((env as Record<string, unknown>).TOLLGATE_STATE);
    const e = {
      ...(env as Record<string, unknown>),
      TOLLGATE_STATE: wrapped,
      TOLLGATE_CONFIG: JSON.stringify({
        server: { logLevel: "error", publicOrigin: "https://gateway.test" },
        upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host, `localhost:${runtimePort}`] },
        payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50" },
        cache: { enabled: true },
        state: { backend: "durable-objects" },
        tenants: [{ id: `rt-${crypto.randomUUID().slice(0, 8)}`, keys: [{ hash: await sha256(key) }], budget: { daily: "100.00" } }],
      }),
      TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
      TOLLGATE_WALLET_KEY: stack.mcpWalletKey,
      TOLLGATE_TOKEN_SECRET: "d".repeat(40),
    };
    const ctx = { waitUntil() {}, passThroughOnException() {} };
    const call = async (path: string, body?: unknown, headers: Record<string, string> = { "x-api-key": key }) => {
      const r = await worker.fetch(
        new Request(`https://gateway.test${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
        e as any,
        ctx,
      );
      const text = await r.text();
      expect(r.status, text.slice(0, 200)).toBe(200);
      return text;
    };
    const measure = async (name: string, run: (i: number) => Promise<unknown>, runs = RUNS) => {
      const timed = async (i: number) => {
        const t = performance.now();
        await run(i);
        const ms = performance.now() - t;
        await new Promise((r) => setTimeout(r, 10));
        return ms;
      };
      state.delay = 0;
      for (let i = 0; i < 2; i++) await timed(1000 + i);
      const calls0 = state.calls;
      const near: number[] = [];
      for (let i = 0; i < runs; i++) near.push(await timed(i));
      const perRequest = (state.calls - calls0) / runs;
      state.delay = DELAY;
      const far: number[] = [];
      for (let i = 0; i < runs; i++) far.push(await timed(100 + i));
      state.delay = 0;
      const waited = Math.max(0, Math.round((Math.min(...far) - Math.min(...near)) / DELAY));
      console.log(
        `durable objects ${name}: ${waited} waited for, ${perRequest.toFixed(1)} calls per request (with those behind the answer)`,
      );
      return waited;
    };

    expect(await measure("paid search hit", () => call("/x402/web/search", { query: "the same query" }))).toBe(0);
    const salt = crypto.randomUUID().slice(0, 8);
    // The coalescing claim and the hold reserved ahead (the ledger index object written alongside the tenant's ledger
    // object) at once, beside the unpaid first call: one call waited for (docs/paid-round-trips.md).
    expect(await measure("paid search miss", (i) => call("/x402/web/search", { query: `miss ${salt} ${i}` }), 5)).toBeLessThanOrEqual(1);
    expect(await measure("creation (profile)", (i) => call("/api/profile", { name: `rt-${salt}-${i}` }))).toBeLessThanOrEqual(1);
    const sbx = JSON.parse(await call("/api/sandbox", { imageName: "node" }));
    try {
      expect(await measure("control read", () => call(`/api/sandbox/${sbx.id}`))).toBe(0);
      const auth = { authorization: `Bearer ${sbx.token}` };
      expect(await measure("runtime call (bound token)", () => call(`/sandbox/${sbx.id}/exec`, { command: "true" }, auth))).toBe(0);
    } finally {
      await worker.fetch(
        new Request(`https://gateway.test/api/sandbox/${sbx.id}/stop`, { method: "PUT", headers: { "x-api-key": key } }),
        e as any,
        ctx,
      );
    }
  }, 120_000);
});
