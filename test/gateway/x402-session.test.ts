import { afterAll, beforeAll, describe, expect, it } from "vitest";
import puppeteer from "puppeteer-core";
import type { EmulatorHandle } from "../../emulator/index.js";
import { startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";

describe("paid browser sessions through the gateway (/x402/session)", () => {
  let emu: EmulatorHandle;
  let s: Awaited<ReturnType<typeof startPaidGateway>>;
  beforeAll(async () => {
    emu = await startEmulatorWithChain();
    s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }, { id: "other" }]);
  });
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("pays for a session, keeps the managementToken and upstream CDP URL, and relays CDP for the tenant", async () => {
    const before = await emu.chain!.balanceOf(s.wallet.address);
    const r = await fetch(`${s.gateway.url}/x402/session`, {
      method: "POST",
      headers: { "x-api-key": s.keys.acme, "content-type": "application/json" },
      body: JSON.stringify({ timeoutMinutes: 5 }),
    });
    const text = await r.text();
    expect(r.status, text).toBe(200);
    expect(r.headers.get("x-tollgate-paid")).toBe("0.01");
    const session = JSON.parse(text);
    expect(session.managementToken).toBeUndefined();
    expect(text).not.toContain(emu.controlUrl.replace("http://", ""));
    expect(session.wsEndpoint).toMatch(new RegExp(`^ws://${s.gateway.url.replace("http://", "")}/devtools/browser/`));
    expect(before - (await emu.chain!.balanceOf(s.wallet.address))).toBe(10_000n);

    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint });
    try {
      const page = (await browser.pages())[0] ?? (await browser.newPage());
      expect(await page.evaluate(() => 6 * 7)).toBe(42);
    } finally {
      await browser.disconnect();
    }

    const got = await fetch(`${s.gateway.url}/x402/session/${session.id}`, { headers: { "x-api-key": s.keys.acme } });
    expect(got.status).toBe(200);
    expect((await got.json()).status).toBe("active");
    const foreign = await fetch(`${s.gateway.url}/x402/session/${session.id}`, { headers: { "x-api-key": s.keys.other } });
    expect(foreign.status).toBe(404);
    const foreignStop = await fetch(`${s.gateway.url}/x402/session/${session.id}/stop`, {
      method: "PUT",
      headers: { "x-api-key": s.keys.other },
    });
    expect(foreignStop.status).toBe(404);
    const stop = await fetch(`${s.gateway.url}/x402/session/${session.id}/stop`, { method: "PUT", headers: { "x-api-key": s.keys.acme } });
    expect(await stop.json()).toEqual({ success: true });

    const ledger = await (await fetch(`${s.gateway.url}/_tollgate/ledger`, { headers: { "x-api-key": s.keys.acme } })).json();
    expect(ledger.entries[0]).toMatchObject({ route: "x402.session.create", amount: "10000", state: "committed" });
  });

  it("refuses an invalid session body before paying", async () => {
    const before = await emu.chain!.balanceOf(s.wallet.address);
    const r = await fetch(`${s.gateway.url}/x402/session`, {
      method: "POST",
      headers: { "x-api-key": s.keys.acme, "content-type": "application/json" },
      body: JSON.stringify({ timeoutMinutes: 5, notAField: true }),
    });
    expect(r.status).toBe(400);
    expect(await emu.chain!.balanceOf(s.wallet.address)).toBe(before);
  });
});
