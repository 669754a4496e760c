// Sold by time with x402 `upto` (Permit2): a buyer holding only a funded wallet (@x402/fetch v2 with the upto client
// scheme registered, after its one Permit2 approval) signs the whole window as a maximum; the gateway settles the
// minutes used when the resource is stopped, and nothing when the upstream refused the creation. The chain judges.
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import puppeteer from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { json, startSalesEmulator, startSellingGateway, type SellingStack, uptoBuyer } from "./stack.js";

const FUNDS = 1_000_000n; // what uptoBuyer's wallet holds
// The credit table's default: 0.0017 a minute; with a 100 % markup a buyer pays 0.0034 a minute, 10 minutes at most.
const PER_MINUTE = 3_400n;
const WINDOW = 10n * PER_MINUTE;

describe("sessions and sandboxes sold by time (upto)", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402", "sessions", "sandboxes"]);
    s = await startSellingGateway(emu, {
      prices: {
        session: { markupPercent: 100, minutes: 10, scheme: "upto" },
        sandbox: { markupPercent: 100, minutes: 10, scheme: "upto" },
      },
      // The sweep (a settlement retried after the facilitator was out of reach) on a 2 s interval.
      payments: { reconcileIntervalSeconds: 2 },
    });
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("offers upto first (the window as the maximum, Permit2, the facilitator named), exact beside it", async () => {
    const r = await fetch(`${s.gateway.url}/api/session`, json({}));
    expect(r.status).toBe(402);
    const offer = decodePaymentRequiredHeader(r.headers.get("payment-required")!);
    expect(offer.accepts.map((a) => a.scheme)).toEqual(["upto", "exact"]);
    const upto = offer.accepts[0]!;
    expect(upto.amount).toBe(WINDOW.toString());
    expect(upto.maxTimeoutSeconds).toBeGreaterThan(600);
    expect(upto.extra).toMatchObject({ assetTransferMethod: "permit2", facilitatorAddress: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/) });
    // The discovery list offers the same.
    const listed = await (await fetch(`${s.gateway.url}/.well-known/x402`)).json();
    const item = listed.items.find((i: { resource: string }) => i.resource === `${s.gateway.url}/api/session`);
    expect(item.accepts.map((a: { scheme: string }) => a.scheme)).toEqual(["upto", "exact"]);
    expect(item.accepts[0].extra.facilitatorAddress).toBe(upto.extra.facilitatorAddress);
  });

  it("a session bought by time and stopped early is settled for the minute used; ledger == chain", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const r = await buyer.pay(`${s.gateway.url}/api/session`, json({}));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("metered");
    expect(r.headers.get("x-tollgate-sale-max")).toBe(WINDOW.toString());
    const session = await r.json();
    // Nothing moved at the purchase: the window is only signed.
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    try {
      const page = await browser.newPage();
      await page.setContent("<title>paid by the minute</title>");
      expect(await page.title()).toBe("paid by the minute");
    } finally {
      await browser.disconnect();
    }
    const stop = await fetch(`${s.gateway.url}/api/session/${session.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${r.headers.get("x-tollgate-wallet-token")}` },
    });
    expect(stop.status).toBe(200);
    expect(stop.headers.get("x-tollgate-sale")).toBe("charged");
    const receipt = decodePaymentResponseHeader(stop.headers.get("payment-response")!);
    expect(receipt.success).toBe(true);
    expect(receipt.amount).toBe(PER_MINUTE.toString());
    // One minute of ten: 0.0034 moved from the buyer to the gateway, no more.
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(PER_MINUTE);
    expect((await chain.balanceOf(s.wallet.address)) - gatewayBefore).toBe(PER_MINUTE);
    // The book: one inbound line of the actual amount and its transaction, matched on chain; outbound and margin beside.
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    const report = await (
      await fetch(`${s.gateway.url}/_tollgate/admin/sales?tenant=${tenant}&check=chain`, { headers: { "x-api-key": s.adminKey } })
    ).json();
    expect(report.sales).toHaveLength(1);
    expect(report.sales[0]).toMatchObject({ amount: PER_MINUTE.toString(), scheme: "upto", minutes: 1, chain: "matched" });
    expect(report.sales[0].transaction).toBe(receipt.transaction);
    expect(report.buyers[0].inbound).toBe("0.0034");
    // A second stop settles nothing more.
    const again = await fetch(`${s.gateway.url}/api/session/${session.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${r.headers.get("x-tollgate-wallet-token")}` },
    });
    expect(again.headers.get("payment-response")).toBeNull();
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(PER_MINUTE);
  });

  it("a sandbox the upstream refused settles nothing: no transfer, no book line", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const mode = (m: string) =>
      fetch(`${emu.controlUrl}/_emulator/accounts/default`, {
        method: "PUT",
        headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ mode: m }),
      });
    expect((await mode("fail")).status).toBe(200);
    let r: Response;
    try {
      r = await buyer.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    } finally {
      await mode("ok");
    }
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(r.headers.get("x-tollgate-sale")).toBe("not-charged");
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    expect(await chain.balanceOf(s.wallet.address)).toBe(gatewayBefore);
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    expect(await s.gateway.gateway.services.sales!.book.list(tenant)).toHaveLength(0);
  });
  it("a stop while the facilitator is out of reach: pending, then settled once by the sweep for the minutes to the stop", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu);
    const r = await buyer.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    expect(r.status).toBe(200);
    const { id } = await r.json();
    emu.facilitator!.switches.failSettle = true;
    let stop: Response;
    try {
      stop = await fetch(`${s.gateway.url}/api/sandbox/${id}/stop`, {
        method: "PUT",
        headers: { authorization: `Bearer ${r.headers.get("x-tollgate-wallet-token")}` },
      });
    } finally {
      emu.facilitator!.switches.failSettle = false;
    }
    expect(stop.status).toBe(200);
    expect(stop.headers.get("x-tollgate-sale")).toBe("pending");
    expect(decodePaymentResponseHeader(stop.headers.get("payment-response")!)).toMatchObject({
      success: false,
      errorReason: "facilitator_unavailable",
    });
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    // The facilitator is back: the sweep settles one minute (the time to the stop, not the ten signed), once.
    let paid = 0n;
    for (let i = 0; i < 60 && paid === 0n; i++) {
      await new Promise((res) => setTimeout(res, 1000));
      paid = FUNDS - (await chain.balanceOf(buyer.address));
    }
    expect(paid).toBe(PER_MINUTE);
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    let book = await s.gateway.gateway.services.sales!.book.list(tenant);
    for (let i = 0; i < 50 && book.length === 0; i++) {
      await new Promise((res) => setTimeout(res, 100));
      book = await s.gateway.gateway.services.sales!.book.list(tenant);
    }
    expect(book).toMatchObject([{ scheme: "upto", minutes: 1, amount: PER_MINUTE.toString() }]);
    await new Promise((res) => setTimeout(res, 3000));
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(PER_MINUTE);
  }, 120_000);
});

describe("a time sale nobody stops", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402", "sandboxes"]);
    // The sweep runs on the reconciler's interval: 2 s here, so the window's end is seen within 2 s.
    s = await startSellingGateway(emu, {
      prices: { sandbox: { markupPercent: 100, minutes: 1, scheme: "upto" } },
      payments: { reconcileIntervalSeconds: 2 },
    });
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("settles its whole window when the window ends", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu);
    const r = await buyer.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("metered");
    const sold = Date.now();
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    // The sweep settles one minute (0.0034) at the window's end; nothing before.
    let paid = 0n;
    while (Date.now() - sold < 90_000) {
      paid = FUNDS - (await chain.balanceOf(buyer.address));
      if (paid > 0n) break;
      await new Promise((res) => setTimeout(res, 1000));
    }
    expect(Date.now() - sold).toBeGreaterThanOrEqual(59_000);
    expect(paid).toBe(PER_MINUTE);
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    // The line is written once the facilitator answered, a moment after the transfer mined.
    let book = await s.gateway.gateway.services.sales!.book.list(tenant);
    for (let i = 0; i < 50 && book.length === 0; i++) {
      await new Promise((res) => setTimeout(res, 100));
      book = await s.gateway.gateway.services.sales!.book.list(tenant);
    }
    expect(book).toMatchObject([{ scheme: "upto", minutes: 1, amount: PER_MINUTE.toString() }]);
  }, 150_000);
});
