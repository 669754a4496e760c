// The money rules of a sale, each with a buyer holding only a wallet (@x402/fetch) and the chain as the judge: an
// upstream failure settles nothing; a retried payment-identifier is charged once; a sale beyond the wallet tenant's
// budget is refused before anything is settled; a disabled wallet tenant (the kill switch) is not charged; a
// facilitator that fails after verify leaves the call refused and nothing settled.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { json, startSalesEmulator, startSellingGateway, v2Buyer, type SellingStack } from "./stack.js";

const FUNDS = 1_000_000n;
const nonceOf = (header: string) => JSON.parse(Buffer.from(header, "base64").toString()).payload.authorization.nonce as `0x${string}`;

describe("the money rules of a sale (emulator + local chain)", () => {
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

  /** The payment headers a buyer's fetch sent (to check their authorizations on chain). */
  const recorded = async () => {
    const buyer = await v2Buyer(emu, FUNDS);
    const sent: string[] = [];
    const { wrapFetchWithPayment } = await import("@x402/fetch");
    const pay = wrapFetchWithPayment(async (input: RequestInfo | URL, init?: RequestInit) => {
      const req = new Request(input, init);
      const sig = req.headers.get("payment-signature");
      if (sig) sent.push(sig);
      return fetch(req);
    }, buyer.client) as typeof fetch;
    return { ...buyer, pay, sent };
  };

  it("an upstream 5xx settles nothing: the buyer's authorization stays unused on chain", async () => {
    const chain = emu.chain!;
    const buyer = await recorded();
    const fail = (mode: string) =>
      fetch(`${emu.controlUrl}/_emulator/accounts/default`, {
        method: "PUT",
        headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ mode }),
      });
    // /api/web/search is billed to credits upstream (the gateway's API key): its account fails with 503.
    expect((await fail("fail")).status).toBe(200);
    try {
      const r = await buyer.pay(`${s.gateway.url}/api/web/search`, json({ query: "edge proxy caching" }));
      expect(r.status).toBeGreaterThanOrEqual(500);
      expect(r.headers.get("x-tollgate-sale")).toBe("not-charged");
      expect(r.headers.get("payment-response")).toBeNull();
    } finally {
      await fail("ok");
    }
    expect(buyer.sent).toHaveLength(1);
    expect(await chain.authorizationState(buyer.address, nonceOf(buyer.sent[0]!))).toBe(false);
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
  });

  it("a retry with the same payment-identifier gets the first answer and is charged once", async () => {
    const chain = emu.chain!;
    const buyer = await recorded();
    const id = `pay_${crypto.randomUUID().replace(/-/g, "")}`;
    buyer.client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      const ext = (paymentRequired.extensions ??= {}) as Record<string, { info?: Record<string, unknown> }>;
      ext["payment-identifier"] = { ...ext["payment-identifier"], info: { ...ext["payment-identifier"]?.info, id } };
    });
    const first = await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "idempotent retries" }));
    expect(first.status).toBe(200);
    expect(first.headers.get("x-tollgate-sale")).toBe("charged");
    const firstBody = await first.text();
    const again = await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "idempotent retries" }));
    expect(again.status).toBe(200);
    expect(again.headers.get("x-tollgate-sale")).toBe("replayed");
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get("payment-response")).toBe(first.headers.get("payment-response"));
    // Two authorizations were signed; one was settled.
    expect(buyer.sent).toHaveLength(2);
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(20_000n);
    expect(await chain.authorizationState(buyer.address, nonceOf(buyer.sent[1]!))).toBe(false);
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    expect(await s.gateway.gateway.services.sales!.book.list(tenant)).toHaveLength(1);
  });

  it("a facilitator that fails after verify: the answer is withheld, nothing settled", async () => {
    const chain = emu.chain!;
    const buyer = await recorded();
    emu.facilitator!.switches.failSettle = true;
    try {
      const r = await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "facilitator down" }));
      expect(r.status).toBe(402);
      const body = await r.json();
      expect(body.code).toBe("settlement_failed");
      expect(body.data).toBeUndefined();
    } finally {
      emu.facilitator!.switches.failSettle = false;
    }
    expect(await chain.authorizationState(buyer.address, nonceOf(buyer.sent[0]!))).toBe(false);
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
  });

  it("a disabled wallet tenant (the kill switch) is refused before anything is settled", async () => {
    const chain = emu.chain!;
    const buyer = await recorded();
    expect((await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "first purchase" }))).status).toBe(200);
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    const off = await fetch(`${s.gateway.url}/_tollgate/admin/tenants/${tenant}/disable`, {
      method: "POST",
      headers: { "x-api-key": s.adminKey },
    });
    expect(off.status).toBe(200);
    const r = await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "after the kill switch" }));
    expect(r.status).toBe(403);
    expect((await r.json()).code).toBe("tenant_disabled");
    expect(buyer.sent).toHaveLength(2);
    expect(await chain.authorizationState(buyer.address, nonceOf(buyer.sent[1]!))).toBe(false);
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(20_000n);
  });
});

describe("a sale beyond the wallet tenant's budget", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402"]);
    // The upstream's search costs 0.005; the buyer's tenant may spend 0.007 a day: one search, not two.
    s = await startSellingGateway(emu, { buyer: { budget: { daily: "0.007" } } });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("is refused before anything is settled", async () => {
    const chain = emu.chain!;
    const buyer = await v2Buyer(emu, FUNDS);
    expect((await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "within budget" }))).status).toBe(200);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const r = await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "beyond the budget" }));
    expect(r.status).not.toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("not-charged");
    expect((await r.json()).code).toMatch(/budget/);
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(20_000n);
    expect(await chain.balanceOf(s.wallet.address)).toBe(gatewayBefore);
  });
});
