// The reconciler runs in the Worker: its cron handler, inside workerd, settles holds nobody settled. An x402 payment
// whose answer was lost is committed or released from the local chain's truth (JSON-RPC over fetch); a credits hold
// past its resource's end time is committed at its maximum. No Node process takes part in the reconciliation: Node
// only runs the chain, the emulator and the proxies that lose the answers.
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createPublicClient, erc20Abi, http } from "viem";
import worker from "../../src/host/worker.js";
import { doStores } from "../../src/state/durable-client.js";
import type { LedgerEntry } from "../../src/state/types.js";

const stack = inject("stack");
const bindings = env as unknown as Record<string, unknown>;
const ledger = doStores(bindings).ledger; // the Worker's own namespace
const AUTH_SECONDS = 10;

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function workerEnv(tenant: string, key: string, upstream: string) {
  const config = {
    server: { logLevel: "error" },
    upstream: { baseUrl: upstream, timeoutMs: 5_000, allowedHosts: [new URL(stack.runtimeUrl).host] },
    payments: {
      networks: [stack.network],
      assets: [stack.asset],
      maxPerRequest: "0.50",
      maxAuthorizationSeconds: AUTH_SECONDS,
      rpc: { [stack.network]: stack.rpcUrl },
    },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [{ id: tenant, keys: [{ hash: await sha256(key) }], budget: { daily: "1.00" } }],
  };
  return {
    ...bindings,
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.reconcileWalletKey,
    TOLLGATE_TOKEN_SECRET: "r".repeat(40),
  };
}

const chain = createPublicClient({ transport: http(stack.rpcUrl) });
const balance = () =>
  chain.readContract({
    address: stack.asset as `0x${string}`,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [stack.reconcileWallet as `0x${string}`],
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One cron tick, as Cloudflare would deliver it, waiting for what the handler left running. */
async function tick(e: Record<string, unknown>) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), e as any, ctx);
  await waitOnExecutionContext(ctx);
}

/** Pays a search through the Worker whose answer is lost; returns the uncertain hold it leaves. */
async function lostPayment(upstream: string, label: string) {
  const tenant = `${label}-${crypto.randomUUID().slice(0, 8)}`;
  const key = `tg_rec_${crypto.randomUUID()}`;
  const e = await workerEnv(tenant, key, upstream);
  const r = await worker.fetch(
    new Request("https://gateway.test/x402/web/search", {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ query: `lost answer ${label}` }),
    }),
    e as any,
    { waitUntil() {}, passThroughOnException() {} } as any,
  );
  expect(r.status).toBe(504);
  expect(((await r.json()) as any).code).toBe("payment_outcome_unknown");
  const [held] = await ledger.list({ tenant });
  expect(held).toMatchObject({ kind: "x402", state: "uncertain", amount: "5000" });
  return { e, tenant, held };
}

/** Cron ticks until the entry leaves its hold, or a deadline. */
async function reconciled(e: Record<string, unknown>, held: LedgerEntry): Promise<LedgerEntry> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    await tick(e);
    const now = (await ledger.get(held.id))!;
    if (now.state !== "uncertain") return now;
    if (Date.now() > deadline) throw new Error(`not reconciled: ${JSON.stringify(now)}`);
    await sleep(1_000);
  }
}

describe("the Worker's cron handler reconciles (workerd + Durable Objects + local chain)", () => {
  it("commits a payment the upstream settled on chain though its answer was lost, and releases one that never arrived", async () => {
    const before = await balance();
    const [settled, lost] = await Promise.all([
      lostPayment(stack.settledButLostUrl, "settled"),
      lostPayment(stack.neverArrivedUrl, "unsent"),
    ]);
    // Held, and counted, until validBefore: a tick now decides nothing.
    await tick(settled.e);
    expect((await ledger.get(settled.held.id))?.state).toBe("uncertain");
    expect((await ledger.usage(settled.tenant, Date.now())).byKind.x402.daily).toBe(5000n);
    const [s, l] = await Promise.all([reconciled(settled.e, settled.held), reconciled(lost.e, lost.held)]);
    expect(s).toMatchObject({ state: "committed", amount: "5000" });
    expect(l).toMatchObject({ state: "released", reason: "authorization expired unused (checked on chain)" });
    expect(before - (await balance())).toBe(5000n);
    expect((await ledger.usage(settled.tenant, Date.now())).daily).toBe(5000n);
    expect((await ledger.usage(lost.tenant, Date.now())).daily).toBe(0n);
  }, 120_000);

  it("commits a credits hold past its resource's end time at its reserved maximum", async () => {
    const tenant = `credits-${crypto.randomUUID().slice(0, 8)}`;
    const e = await workerEnv(tenant, `tg_rec_${crypto.randomUUID()}`, stack.controlUrl);
    const now = Date.now();
    const hold = (id: string, endsInSeconds: number) =>
      ledger.reserve(
        {
          id,
          kind: "credits",
          tenant,
          route: "/api/session",
          fingerprint: "f",
          amount: "12000",
          meter: "minute",
          resource: `session:${id}`,
          validBefore: Math.floor(now / 1000) + endsInSeconds,
        },
        { daily: 1_000_000n },
        now,
      );
    const ended = `ended-${crypto.randomUUID()}`;
    const running = `running-${crypto.randomUUID()}`;
    expect((await hold(ended, -60)).ok).toBe(true);
    expect((await hold(running, 3600)).ok).toBe(true);
    await tick(e);
    expect(await ledger.get(ended)).toMatchObject({ kind: "credits", state: "committed", amount: "12000" });
    expect(await ledger.get(running)).toMatchObject({ state: "reserved" });
    expect((await ledger.usage(tenant, now)).byKind.credits.daily).toBe(24_000n);
  });
});
