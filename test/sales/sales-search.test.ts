// Tollgate sells a search to a client holding only a wallet (@x402/fetch, x402 v2): 402 naming the gateway as seller,
// the paid retry verified by the facilitator, run as the wallet's own tenant, settled on the local chain after the
// upstream answered; the sales book's inbound equals the chain's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { EmulatorHandle } from "../../emulator/index.js";
import { json, startSalesEmulator, startSellingGateway, v2Buyer, type SellingStack } from "./stack.js";

describe("Tollgate sells a search over x402 (emulator + local chain + the library's facilitator over HTTP)", () => {
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

  it("answers a keyless call with 402: PAYMENT-REQUIRED (v2) naming the gateway's wallet, the v1 body beside it", async () => {
    const r = await fetch(`${s.gateway.url}/x402/web/search`, json({ query: "edge proxy caching" }));
    expect(r.status).toBe(402);
    const required = decodePaymentRequiredHeader(r.headers.get("payment-required")!);
    expect(required.x402Version).toBe(2);
    expect(required.resource.url).toBe(`${s.gateway.url}/x402/web/search`);
    expect(required.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: emu.chain!.network,
        amount: "20000",
        asset: emu.chain!.token.address,
        payTo: s.wallet.address,
      }),
    ]);
    expect(required.extensions?.["payment-identifier"]).toBeDefined();
    // Bazaar metadata: how to call what is sold (an example body and its schema).
    expect(required.extensions?.bazaar).toMatchObject({
      info: { input: { type: "http", method: "POST", bodyType: "json", body: { query: expect.any(String) } } },
    });
    const body = await r.json();
    expect(body).toMatchObject({ x402Version: 1, code: "payment_required" });
    expect(body.accepts[0]).toMatchObject({ network: "base-sepolia", maxAmountRequired: "20000", payTo: s.wallet.address });
  });

  it("lists what it sells at /.well-known/x402 (the Bazaar discovery list's shape)", async () => {
    const r = await fetch(`${s.gateway.url}/.well-known/x402`);
    expect(r.status).toBe(200);
    const doc = await r.json();
    expect(doc.x402Version).toBe(2);
    const byUrl = Object.fromEntries(doc.items.map((i: { resource: string }) => [i.resource.slice(s.gateway.url.length), i]));
    expect(Object.keys(byUrl).sort()).toEqual(["/api/sandbox", "/api/session", "/api/web/search", "/x402/session", "/x402/web/search"]);
    expect(byUrl["/x402/web/search"]).toMatchObject({
      type: "http",
      accepts: [expect.objectContaining({ scheme: "exact", amount: "20000", payTo: s.wallet.address })],
      metadata: { class: "search", priceUsd: "0.02", bazaar: { input: { method: "POST" } } },
    });
  });

  it("sells a search: the buyer pays the gateway, the gateway pays the upstream, the book's inbound is the chain's", async () => {
    const chain = emu.chain!;
    const buyer = await v2Buyer(emu);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const upstreamBefore = await chain.balanceOf(chain.payee);
    const r = await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "edge proxy caching" }));
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.data.results.length).toBeGreaterThan(0);
    expect(r.headers.get("x-tollgate-sale")).toBe("charged");
    const receipt = decodePaymentResponseHeader(r.headers.get("payment-response")!);
    expect(receipt).toMatchObject({ success: true, payer: buyer.address, network: chain.network });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    // On chain: the buyer paid 0.02, the gateway paid the upstream its 0.005 and kept the margin.
    expect(1_000_000n - (await chain.balanceOf(buyer.address))).toBe(20_000n);
    expect((await chain.balanceOf(chain.payee)) - upstreamBefore).toBe(5_000n);
    expect((await chain.balanceOf(s.wallet.address)) - gatewayBefore).toBe(15_000n);

    // The wallet tenant: made on the first purchase, listed by the admin API, its outbound in its ledger.
    const tenantId = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    const tenants = await (await fetch(`${s.gateway.url}/_tollgate/admin/tenants`, { headers: { "x-api-key": s.adminKey } })).json();
    expect(tenants.tenants.map((t: { id: string }) => t.id)).toContain(tenantId);
    const ledger = await (
      await fetch(`${s.gateway.url}/_tollgate/admin/ledger?tenant=${tenantId}`, { headers: { "x-api-key": s.adminKey } })
    ).json();
    const outbound = ledger.entries.filter((e: { state: string }) => e.state === "committed");
    expect(outbound).toHaveLength(1);
    expect(outbound[0]).toMatchObject({ tenant: tenantId, amount: "5000", kind: "x402" });

    const sales = await s.gateway.gateway.services.sales!.book.list(tenantId);
    expect(sales).toHaveLength(1);
    expect(sales[0]).toMatchObject({ payer: buyer.address, amount: "20000", transaction: receipt.transaction, row: "x402.web.search" });

    // The operator's view: inbound (the book), outbound (the ledger) and margin per buyer; each sale against the chain.
    const report = await (
      await fetch(`${s.gateway.url}/_tollgate/admin/sales?check=chain`, { headers: { "x-api-key": s.adminKey } })
    ).json();
    expect(report.buyers).toContainEqual({
      tenant: tenantId,
      payer: buyer.address,
      sales: 1,
      inbound: "0.02",
      outbound: "0.005",
      margin: "0.015",
    });
    expect(report.sales.find((x: { tenant: string }) => x.tenant === tenantId)).toMatchObject({
      chain: "matched",
      priceUsd: "0.02",
      payTo: s.wallet.address,
    });
    // A buyer is not an operator.
    const denied = await fetch(`${s.gateway.url}/_tollgate/admin/sales`, {
      headers: { authorization: `Bearer ${r.headers.get("x-tollgate-wallet-token")}` },
    });
    expect(denied.status).toBeGreaterThanOrEqual(401);
  });
});
