// The money events port as createGateway wires it (src/gateway.ts): what payments announces (a threshold crossed, a
// window exhausted) reaches the operators' listener, which records the alert (audit log, webhooks' outbox) and, for a
// tenant whose policy is onExhausted = "stop", pulls the kill switch. In-process, memory state, no upstream call.
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { announceExhausted } from "../../src/payments/budgets/exhaustion.js";
import { reserveSpend, settleSpend } from "../../src/payments/spend.js";
import { moneyListener } from "../../src/operators/alerts/money-listener.js";

const HASH = (n: number) => `sha256:${String(n).padStart(64, "0")}`;
let gw: Gateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

function gateway(): Gateway {
  const config = parseConfig({
    server: { logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    tenants: [
      { id: "acme", keys: [{ hash: HASH(1) }], budget: { daily: "1.00" } },
      { id: "halt", keys: [{ hash: HASH(2) }], budget: { daily: "0.10" }, onExhausted: "stop" },
    ],
  });
  gw = createGateway(config, { secrets: {}, now: () => Date.parse("2026-03-03T10:00:00Z") });
  return gw;
}

/** The audit actions recorded so far, oldest first, once background work (the alert's record) has settled. */
async function actions(g: Gateway): Promise<string[]> {
  for (let i = 0; i < 50; i++) await new Promise((r) => setTimeout(r, 2));
  return (await g.stores.audit.list({ limit: 100 })).map((e) => e.action).reverse();
}

describe("the money events port", () => {
  it("is wired by createGateway to the operators' listener", () => {
    const g = gateway();
    expect(g.services.moneyEvents).toBeDefined();
    expect(typeof moneyListener(g.services).announce).toBe("function");
  });

  it("carries a threshold crossed by a settlement to the alert log", async () => {
    const g = gateway();
    const acme = g.directory.get("acme")!;
    const hold = await reserveSpend(g.services, { tenant: acme, entry: { route: "search", fingerprint: "f", amount: "600000" } });
    await settleSpend(g.services, hold);
    expect(await actions(g)).toEqual(["alert.budget.threshold"]);
    const [alert] = await g.stores.audit.list({ limit: 1 });
    expect(alert!.after).toMatchObject({ type: "budget.threshold", window: "daily", threshold: 50, spent: "0.60", limit: "1.00" });
  });

  it('records the exhaustion, and pulls the kill switch only for onExhausted = "stop", once per window', async () => {
    const g = gateway();
    await announceExhausted(g.services, "acme", "daily");
    expect(await actions(g)).toEqual(["alert.budget.exhausted"]);
    await announceExhausted(g.services, "halt", "daily");
    await announceExhausted(g.services, "halt", "daily"); // the same window: announced once
    expect((await actions(g)).sort()).toEqual(["alert.budget.exhausted", "alert.budget.exhausted", "tenant.kill"]);
    const kill = (await g.stores.audit.list({ limit: 100 })).find((e) => e.action === "tenant.kill")!;
    expect(kill).toMatchObject({ target: "tenant:halt", after: { reason: "daily budget exhausted" } });
  });
});
