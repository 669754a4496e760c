// The Worker entry, inside workerd, paying searches against the emulator on the local chain, budgets held in DOs.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createPublicClient, erc20Abi, http } from "viem";
import worker from "../../src/host/worker.js";
import { standInCalls } from "./stand-ins.js";

const stack = inject("stack");

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function workerEnv(tenants: Array<{ id: string; key: string; budget?: Record<string, string> }>) {
  const config = {
    server: { logLevel: "error" },
    upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host] },
    payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50" },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: await Promise.all(tenants.map(async (t) => ({ id: t.id, keys: [{ hash: await sha256(t.key) }], budget: t.budget ?? {} }))),
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.walletKey,
    TOLLGATE_TOKEN_SECRET: "w".repeat(40),
  };
}

const chain = createPublicClient({ transport: http(stack.rpcUrl) });
const balance = () =>
  chain.readContract({
    address: stack.asset as `0x${string}`,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [stack.wallet as `0x${string}`],
  });
const ctx = { waitUntil() {}, passThroughOnException() {} };

function search(e: Record<string, unknown>, key: string, query: string) {
  return worker.fetch(
    new Request("https://gateway.test/x402/web/search", {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ query }),
    }),
    e as any,
    ctx,
  );
}

describe("the Worker pays x402 (workerd + Durable Objects + local chain)", () => {
  it("pays a search: the wallet's on-chain balance falls by exactly the price", async () => {
    const key = `tg_worker_${crypto.randomUUID()}`;
    const e = await workerEnv([{ id: `w-${crypto.randomUUID().slice(0, 8)}`, key, budget: { daily: "1.00" } }]);
    const before = await balance();
    const r = await search(e, key, "electric vehicle charging");
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
    const body = (await r.json()) as any;
    expect(body.data.results.length).toBeGreaterThan(0);
    expect(before - (await balance())).toBe(5000n);
  });

  it("enforces a budget in Durable Objects: 20 concurrent searches with budget for 4 → exactly 4 payments", async () => {
    const key = `tg_worker_${crypto.randomUUID()}`;
    const e = await workerEnv([{ id: `b-${crypto.randomUUID().slice(0, 8)}`, key, budget: { daily: "0.02" } }]);
    const before = await balance();
    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => search(e, key, `worker budget ${i} ${crypto.randomUUID()}`)));
    const statuses = rs.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.filter((s) => s === 402)).toHaveLength(16);
    const refused = rs.find((r) => r.status === 402)!;
    expect(refused.headers.get("payment-required")).toBeNull();
    expect(((await refused.json()) as any).code).toBe("budget_exceeded");
    expect(before - (await balance())).toBe(4n * 5000n);
  });

  it("ran none of the code the bundle's stand-ins replace (ajv, Zod 3, viem's createPublicClient)", () => {
    expect(standInCalls()).toEqual([]);
  });
});
