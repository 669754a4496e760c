// The Worker's own metrics and readiness inside workerd: per-isolate counters rendered as Prometheus text, and a
// readiness answer that pings the Durable Objects and reads the wallet's balance.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";

const stack = inject("stack");
const METRICS_TOKEN = "w-metrics-" + "t".repeat(24);
const ctx = { waitUntil() {}, passThroughOnException() {} };

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function workerEnv(tenant: string, key: string, scopes?: string[]) {
  const config = {
    server: { logLevel: "error" },
    upstream: { baseUrl: stack.controlUrl },
    payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50", rpc: { [stack.network]: stack.rpcUrl } },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [{ id: tenant, keys: [{ hash: await sha256(key) }], budget: { daily: "1.00" }, ...(scopes ? { scopes } : {}) }],
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.walletKey,
    TOLLGATE_TOKEN_SECRET: "w".repeat(40),
    TOLLGATE_METRICS_TOKEN: METRICS_TOKEN,
  } as any;
}

describe("operator endpoints on the Worker (workerd + Durable Objects + local chain)", () => {
  it("counts a paid search in its metrics, equal to the ledger's entry", async () => {
    const tenant = `m-${crypto.randomUUID().slice(0, 8)}`;
    const key = `tg_worker_${crypto.randomUUID()}`;
    const e = await workerEnv(tenant, key);
    const r = await worker.fetch(
      new Request("https://gateway.test/x402/web/search", {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ query: `worker metrics ${tenant}` }),
      }),
      e,
      ctx,
    );
    expect(r.status).toBe(200);
    const refused = await worker.fetch(new Request("https://gateway.test/_tollgate/metrics"), e, ctx);
    expect(refused.status).toBe(401);
    const m = await worker.fetch(
      new Request("https://gateway.test/_tollgate/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }),
      e,
      ctx,
    );
    expect(m.status).toBe(200);
    expect(m.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await m.text();
    const ledger = (await (
      await worker.fetch(new Request("https://gateway.test/_tollgate/ledger", { headers: { "x-api-key": key } }), e, ctx)
    ).json()) as any;
    const committed = ledger.entries.filter((x: any) => x.state === "committed");
    expect(committed).toHaveLength(1);
    expect(text).toContain(`tollgate_payments_total{tenant="${tenant}",state="committed"} 1\n`);
    expect(text).toContain(`tollgate_payments_usd_total{tenant="${tenant}",state="committed"} ${Number(committed[0].amount) / 1e6}\n`);
    expect(text).toContain(`tollgate_requests_total{route="x402.web.search",method="POST",code="200",tenant="${tenant}"} 1\n`);
    expect(text).toMatch(/^tollgate_build_info\{version="[^"]+",runtime="workerd"\} 1$/m);
    expect(text).toContain('tollgate_request_duration_seconds_count{class="search"}');
    expect(text).toContain(`tollgate_budget_remaining_usd{tenant="${tenant}",window="daily"} 0.995\n`);
    expect(text).toContain("tollgate_state_up 1\n");
  });

  it("is ready: Durable Objects answer, the upstream answers, and the wallet's balance is read through the RPC", async () => {
    const key = `tg_worker_${crypto.randomUUID()}`;
    const e = await workerEnv(`r-${crypto.randomUUID().slice(0, 8)}`, key, ["admin"]);
    // Anyone may ask; only an operator key sees the wallet's figures.
    const anonymous = (await (await worker.fetch(new Request("https://gateway.test/_tollgate/ready"), e, ctx)).json()) as any;
    expect(anonymous.checks.wallet).toEqual({ ok: true });
    const r = await worker.fetch(new Request("https://gateway.test/_tollgate/ready", { headers: { "x-api-key": key } }), e, ctx);
    const body = (await r.json()) as any;
    expect(r.status).toBe(200);
    expect(body.status).toBe("ready");
    expect(body.checks.state).toMatchObject({ ok: true, backend: "durable-objects" });
    expect(body.checks.upstream.ok).toBe(true);
    expect(body.checks.wallet.ok).toBe(true);
    expect(Number(body.checks.wallet.balance)).toBeGreaterThan(1);
  });
});
