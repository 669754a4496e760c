// Budget alerts on the Worker: the webhook delivery and the audit record of a threshold crossed by a request run after
// its response, kept alive by the request's ExecutionContext.waitUntil (workerd may otherwise cancel them). The
// receiver (Node, on 127.0.0.1) holds its answer 500 ms, so a delivery not handed to waitUntil would still be unanswered
// when the request's waitUntil work is done.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";

const stack = inject("stack");
const noWaiting = { waitUntil() {}, passThroughOnException() {} };

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("budget alerts on the Worker (workerd + Durable Objects + local chain)", () => {
  it("delivers the webhook and writes the audit record of a threshold crossed by a request, within its waitUntil", async () => {
    const tenant = `al-${crypto.randomUUID().slice(0, 8)}`;
    const key = `tg_worker_${crypto.randomUUID()}`;
    const ops = `tg_ops_${crypto.randomUUID()}`;
    const config = {
      server: { logLevel: "error" },
      upstream: { baseUrl: stack.controlUrl },
      payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50" },
      cache: { enabled: false },
      state: { backend: "durable-objects" },
      // The receiver listens on 127.0.0.1: loopback (and http) allowlisted explicitly.
      alerts: { allowHttp: true, allowCidrs: ["127.0.0.0/8"] },
      tenants: [
        // $0.005 a search against $0.01 a day: the first search crosses 50 %.
        { id: tenant, keys: [{ hash: await sha256(key) }], budget: { daily: "0.01" }, alerts: { webhooks: [stack.webhookUrl] } },
        { id: `ops-${tenant}`, scopes: ["admin"], keys: [{ hash: await sha256(ops) }] },
      ],
    };
    const e = {
      ...(env as Record<string, unknown>),
      TOLLGATE_CONFIG: JSON.stringify(config),
      TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
      TOLLGATE_WALLET_KEY: stack.alertsWalletKey,
      TOLLGATE_TOKEN_SECRET: "w".repeat(40),
    } as any;

    const ctx = createExecutionContext();
    const r = await worker.fetch(
      new Request("https://gateway.test/x402/web/search", {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ query: `worker alert ${tenant}` }),
      }),
      e,
      ctx,
    );
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    await waitOnExecutionContext(ctx);

    const day = new Date().toISOString().slice(0, 10);
    const received = ((await (await fetch(stack.webhookUrl)).json()) as { deliveries: any[] }).deliveries.filter(
      (d) => d.json.data.tenant === tenant,
    );
    expect(received.map((d) => d.id)).toEqual([`budget.threshold:${tenant}:daily:${day}:50`]);
    expect(received[0].answeredAt).toBeTypeOf("number"); // answered (after 500 ms) before the waitUntil work ended
    expect(received[0].json).toMatchObject({
      type: "budget.threshold",
      data: { window: "daily", threshold: 50, spent: "0.005", limit: "0.01" },
    });

    const audit = (await (
      await worker.fetch(
        new Request("https://gateway.test/_tollgate/admin/audit?limit=100", { headers: { "x-api-key": ops } }),
        e,
        noWaiting,
      )
    ).json()) as { entries: any[] };
    const alerts = audit.entries.filter((x) => x.target === `tenant:${tenant}` && x.action.startsWith("alert."));
    expect(alerts.map((x) => x.after.id)).toEqual([`budget.threshold:${tenant}:daily:${day}:50`]);
    expect(alerts[0].after.receivers).toBe(1);
  });
});
