// The inbound books against the chain on the reconciler's pass (the loop that settles outbound holds): a sale bought
// with @x402/fetch is confirmed on chain; a book row whose transfer is missing is a mismatch: the metric, an alert
// (audited, to the global receivers) and a banner on every console page an operator opens.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { json, startSalesEmulator, startSellingGateway, v2Buyer, type SellingStack } from "./stack.js";

describe("inbound reconciliation (emulator + local chain)", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402"]);
    s = await startSellingGateway(emu);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  const admin = (path: string) => fetch(`${s.gateway.url}${path}`, { headers: { "x-api-key": s.adminKey } });
  const consolePage = async () => {
    const login = await fetch(`${s.gateway.url}/_tollgate/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { origin: s.gateway.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: s.adminKey }),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    return (await fetch(`${s.gateway.url}/_tollgate/console`, { headers: { cookie } })).text();
  };
  const metric = async () => {
    const text = await (await admin("/_tollgate/metrics")).text();
    return Number(/^tollgate_sales_inbound_mismatches (\S+)$/m.exec(text)?.[1]);
  };

  it("confirms a real sale; a book row whose transfer is missing is a metric, an alert and a console banner", async () => {
    const buyer = await v2Buyer(emu);
    expect((await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "books" }))).status).toBe(200);
    const gw = s.gateway.gateway;
    const clean = await gw.reconciler.runOnce();
    expect(clean.salesInbound).toEqual({ checked: 1, mismatches: 0 });
    expect(await metric()).toBe(0);
    expect(await consolePage()).not.toContain("data-gateway-warning");

    // A line of the book with no transfer behind it (a transaction hash the chain never saw).
    const [sold] = await gw.services.sales!.book.list();
    const ghost = `0x${"ab".repeat(32)}`;
    await gw.services.sales!.book.record({ ...sold!, at: Date.now(), transaction: ghost, requestId: "ghost" });
    const pass = await gw.reconciler.runOnce();
    // The confirmed sale is not asked about again: only the new line is checked.
    expect(pass.salesInbound).toEqual({ checked: 1, mismatches: 1 });
    expect(await metric()).toBe(1);

    const report = await (await admin("/_tollgate/admin/sales")).json();
    expect(report.inbound).toMatchObject({ matched: 1, mismatches: [{ transaction: ghost, verdict: "missing", tenant: sold!.tenant }] });
    const page = await consolePage();
    expect(page).toContain("data-gateway-warning");
    expect(page).toContain("1 sale paid by wallet buyers is not on chain");

    // Alerted once per transaction, however many passes see it.
    await gw.reconciler.runOnce();
    let alerts: Array<{ action: string; after?: { transaction?: string } }> = [];
    for (let i = 0; i < 50; i++) {
      alerts = ((await (await admin("/_tollgate/admin/audit?limit=200")).json()).entries ?? []).filter(
        (e: { action: string }) => e.action === "alert.sales.inbound_mismatch",
      );
      if (alerts.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.after).toMatchObject({ transaction: ghost, verdict: "missing" });
  }, 120_000);
});
