// A v1 client (x402-fetch, the frozen x402 v1 package: the 402's JSON body, X-PAYMENT, X-PAYMENT-RESPONSE) holding only
// a funded wallet buys a search, a sandbox (then execs in it) and a browser session (then drives it with puppeteer-core
// over the gateway's CDP relay) from the same offer the v2 clients read.
import puppeteer from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { json, startSalesEmulator, startSellingGateway, v1Buyer, type SellingStack } from "./stack.js";

const FUNDS = 1_000_000n;

describe("Tollgate sells to x402 v1 clients (x402-fetch)", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402", "sandboxes", "sessions"]);
    s = await startSellingGateway(emu);
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("sells a search and a sandbox; the receipt comes back in X-PAYMENT-RESPONSE, the book's inbound is the chain's", async () => {
    const chain = emu.chain!;
    const buyer = await v1Buyer(emu, FUNDS);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const r = await buyer.pay(`${s.gateway.url}/x402/web/search`, json({ query: "edge proxy caching" }));
    expect(r.status).toBe(200);
    expect((await r.json()).data.results.length).toBeGreaterThan(0);
    expect(r.headers.get("x-tollgate-sale")).toBe("charged");
    const receipt = JSON.parse(Buffer.from(r.headers.get("x-payment-response")!, "base64").toString());
    expect(receipt).toMatchObject({ success: true, payer: buyer.address });

    const c = await buyer.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    expect(c.status).toBe(200);
    const sbx = await c.json();
    const exec = await fetch(`${sbx.runtime.baseUrl}/exec`, {
      method: "POST",
      headers: { authorization: `Bearer ${sbx.token}`, "content-type": "application/json" },
      body: JSON.stringify({ command: "echo v1-wallet" }),
    });
    expect(exec.status).toBe(200);
    expect(JSON.stringify(await exec.json())).toContain("v1-wallet");

    // 0.02 + 0.05 from the buyer; the gateway keeps it less the search's 0.005 paid upstream.
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(70_000n);
    expect((await chain.balanceOf(s.wallet.address)) - gatewayBefore).toBe(65_000n);
    const book = await s.gateway.gateway.services.sales!.book.list(`wallet-${buyer.address.toLowerCase().slice(2)}`);
    expect(book.map((x) => x.amount)).toEqual(["20000", "50000"]);
    expect(new Set(book.map((x) => x.transaction)).size).toBe(2);
    await fetch(`${s.gateway.url}/api/sandbox/${sbx.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${c.headers.get("x-tollgate-wallet-token")}` },
    });
  });

  it("sells a browser session; puppeteer-core connects to the wsEndpoint handed back, through the gateway", async () => {
    const chain = emu.chain!;
    const buyer = await v1Buyer(emu, FUNDS);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const r = await buyer.pay(`${s.gateway.url}/api/session`, json({}));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("charged");
    const receipt = JSON.parse(Buffer.from(r.headers.get("x-payment-response")!, "base64").toString());
    expect(receipt).toMatchObject({ success: true, payer: buyer.address });
    const session = await r.json();
    // The CDP endpoint is the gateway's, not the upstream's: the browser is reached through the gateway only.
    const ws = new URL(session.wsEndpoint);
    expect(ws.host).toBe(new URL(s.gateway.url).host);
    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    try {
      const page = await browser.newPage();
      await page.setContent("<title>bought with x402 v1</title><p id=p>v1</p>");
      expect(await page.title()).toBe("bought with x402 v1");
      expect(await page.$eval("#p", (el) => el.textContent)).toBe("v1");
    } finally {
      await browser.disconnect();
    }
    // 0.04 from the buyer to the gateway (sessions are paid upstream in credits); the book's line is the chain's.
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(40_000n);
    expect((await chain.balanceOf(s.wallet.address)) - gatewayBefore).toBe(40_000n);
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    const report = await (
      await fetch(`${s.gateway.url}/_tollgate/admin/sales?tenant=${tenant}&check=chain`, { headers: { "x-api-key": s.adminKey } })
    ).json();
    expect(report.sales).toHaveLength(1);
    expect(report.sales[0]).toMatchObject({ amount: "40000", row: "session.create", chain: "matched" });
    expect(report.sales[0].transaction).toBe(receipt.transaction);
    const stop = await fetch(`${s.gateway.url}/api/session/${session.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${r.headers.get("x-tollgate-wallet-token")}` },
    });
    expect(stop.status).toBe(200);
  });
});
