// A wallet buys a sandbox (then execs in it through the gateway) and a browser session (then drives it with
// puppeteer-core over the gateway's CDP relay), holding nothing but a funded wallet (@x402/fetch). What it bought stays
// its own: the wallet token handed back with the purchase reads it; another wallet's token gets 404.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import puppeteer from "puppeteer-core";
import type { EmulatorHandle } from "../../emulator/index.js";
import { json, startSalesEmulator, startSellingGateway, v2Buyer, type Buyer, type SellingStack } from "./stack.js";

const FUNDS = 1_000_000n;

describe("Tollgate sells sandboxes and browser sessions to wallets", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  let alice: Buyer;
  let bob: Buyer;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402", "sandboxes", "sessions"]);
    s = await startSellingGateway(emu);
    [alice, bob] = await Promise.all([v2Buyer(emu, FUNDS), v2Buyer(emu, FUNDS)]);
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("sells a sandbox: create, then exec through the gateway with the token in the answer", async () => {
    const chain = emu.chain!;
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const r = await alice.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("charged");
    const sbx = await r.json();
    expect(sbx.runtime.baseUrl).toBe(`${s.gateway.url}/sandbox/${sbx.id}`);
    const exec = await fetch(`${sbx.runtime.baseUrl}/exec`, {
      method: "POST",
      headers: { authorization: `Bearer ${sbx.token}`, "content-type": "application/json" },
      body: JSON.stringify({ command: "echo bought-with-a-wallet" }),
    });
    expect(exec.status).toBe(200);
    expect(JSON.stringify(await exec.json())).toContain("bought-with-a-wallet");
    // Paid on chain: 0.05 from the buyer to the gateway (the upstream bills the gateway's credits).
    expect(FUNDS - (await chain.balanceOf(alice.address))).toBe(50_000n);
    expect((await chain.balanceOf(s.wallet.address)) - gatewayBefore).toBe(50_000n);

    // The wallet token reads what the wallet bought; another wallet's token gets 404 for the same id.
    const mine = r.headers.get("x-tollgate-wallet-token")!;
    expect(mine).toMatch(/^eyJ/);
    const read = await fetch(`${s.gateway.url}/api/sandbox/${sbx.id}`, { headers: { authorization: `Bearer ${mine}` } });
    expect(read.status).toBe(200);
    const theirs = await bob.pay(`${s.gateway.url}/x402/web/search`, json({ query: "bob's first purchase" }));
    expect(theirs.status).toBe(200);
    const bobToken = theirs.headers.get("x-tollgate-wallet-token")!;
    const other = await fetch(`${s.gateway.url}/api/sandbox/${sbx.id}`, { headers: { authorization: `Bearer ${bobToken}` } });
    expect(other.status).toBe(404);
    const otherExec = await fetch(`${s.gateway.url}/sandbox/${sbx.id}/exec`, {
      method: "POST",
      headers: { authorization: `Bearer ${bobToken}`, "content-type": "application/json" },
      body: JSON.stringify({ command: "id" }),
    });
    expect(otherExec.status).not.toBe(200);
    // The wallet token spends nothing: a further sandbox is paid again, not taken on the token.
    const free = await fetch(`${s.gateway.url}/api/sandbox`, {
      method: "POST",
      headers: { authorization: `Bearer ${mine}`, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(free.status).not.toBe(200);
    const stop = await fetch(`${s.gateway.url}/api/sandbox/${sbx.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${mine}` },
    });
    expect(stop.status).toBe(200);
  });

  it("sells a browser session: puppeteer-core connects through the gateway's CDP relay", async () => {
    const r = await alice.pay(`${s.gateway.url}/api/session`, json({}));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("charged");
    const session = await r.json();
    expect(session.wsEndpoint).toMatch(new RegExp(`^${s.gateway.url.replace("http", "ws")}/devtools/browser/${session.id}\\?token=eyJ`));
    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    try {
      const page = await browser.newPage();
      await page.setContent("<title>bought with a wallet</title>");
      expect(await page.title()).toBe("bought with a wallet");
    } finally {
      await browser.disconnect();
    }
    expect(FUNDS - (await emu.chain!.balanceOf(alice.address))).toBe(50_000n + 40_000n);
    const stop = await fetch(`${s.gateway.url}/api/session/${session.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${r.headers.get("x-tollgate-wallet-token")}` },
    });
    expect(stop.status).toBe(200);
  });
});
