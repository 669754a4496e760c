// Browser sessions through the gateway: the unmodified SDK, puppeteer-core and playwright-core against real Chromium.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { chromium } from "playwright-core";
import { startPageServer } from "../emulator/sessions-harness.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { tryUpgrade } from "../helpers/ws-probe.js";

const PAGE = `<!doctype html><html><head><title>Through the gateway</title><style>
  body { margin: 0 } #btn { position: absolute; left: 20px; top: 20px; width: 120px; height: 40px }
  #field { position: absolute; left: 20px; top: 100px; width: 300px; height: 30px }
</style></head><body><button id="btn">Click</button><input id="field">
<script>window.clicks = 0; btn.addEventListener("click", () => window.clicks++);</script></body></html>`;

describe("browser sessions through Tollgate", () => {
  let stack: SessionGateway;
  let pages: { url: string; close(): Promise<void> };
  let acme: Hyperbrowser;
  let rival: Hyperbrowser;
  let session: Awaited<ReturnType<Hyperbrowser["sessions"]["create"]>>;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    [stack, pages] = await Promise.all([startSessionGateway([{ id: "acme" }, { id: "rival" }]), startPageServer({ "/": PAGE })]);
    acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
    rival = new Hyperbrowser({ apiKey: stack.keys.rival!, baseUrl: stack.gateway.url });
    session = await acme.sessions.create({ screen: { width: 800, height: 600 } });
    browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    page = await browser.newPage();
    await page.goto(`${pages.url}/`);
  });

  afterAll(async () => {
    await browser?.disconnect().catch(() => {});
    await stack?.close();
    await pages?.close();
  });

  it("creates a session with the unmodified SDK, every URL on the gateway and no upstream credential in sight", () => {
    const gw = stack.gateway.url;
    expect(session.status).toBe("active");
    expect(session.wsEndpoint).toMatch(new RegExp(`^${gw.replace("http", "ws")}/devtools/browser/${session.id}\\?token=eyJ`));
    expect(session.computerActionEndpoint).toBe(`${gw}/_tollgate/computer-action/${session.id}`);
    expect(session.sessionUrl).toBe(`${gw}/api/session/${session.id}`);
    expect(session.token).toBe(new URL(session.wsEndpoint).searchParams.get("token"));
    const text = JSON.stringify(session);
    expect(text).not.toContain(stack.emulator.controlUrl.replace("http://", ""));
    expect(text).not.toContain(stack.emulator.apiKey);
  });

  it("lets puppeteer-core drive a page through the gateway's CDP relay", async () => {
    expect(await page.title()).toBe("Through the gateway");
    expect(await page.evaluate(() => 6 * 7)).toBe(42);
  });

  it("lets playwright-core connect over CDP through the same wsEndpoint", async () => {
    const pw = await chromium.connectOverCDP((await acme.sessions.get(session.id)).wsEndpoint);
    try {
      const titles = await Promise.all(
        pw
          .contexts()
          .flatMap((ctx) => ctx.pages())
          .map((p) => p.title()),
      );
      expect(titles).toContain("Through the gateway");
    } finally {
      await pw.close().catch(() => {});
    }
  });

  it("performs computer actions through the SDK, posted to the gateway's endpoint with the tenant key", async () => {
    const before = await page.evaluate(() => (window as any).clicks);
    const r = await acme.computerAction.click(session.id, 80, 40);
    expect(r.success).toBe(true);
    expect(await page.evaluate(() => (window as any).clicks)).toBe(before + 1);
    await acme.computerAction.click(session, 100, 115);
    await acme.computerAction.typeText(session, "via tollgate");
    expect(await page.$eval("#field", (el) => (el as HTMLInputElement).value)).toBe("via tollgate");
    const shot = await acme.computerAction.screenshot(session.id);
    expect(shot.screenshot?.length).toBeGreaterThan(100);
  });

  it("lists only the tenant's own sessions, with a matching totalCount", async () => {
    const mine = await acme.sessions.list();
    expect(mine.sessions.map((s) => s.id)).toEqual([session.id]);
    expect(mine.totalCount).toBe(1);
    const theirs = await rival.sessions.list();
    expect(theirs.sessions).toEqual([]);
    expect(theirs.totalCount).toBe(0);
    expect((await acme.sessions.getActiveSessionsCount()).activeSessionsCount).toBe(1);
    expect((await rival.sessions.getActiveSessionsCount()).activeSessionsCount).toBe(0);
  });

  it("hides the session from another tenant: get, stop and computer actions answer 404", async () => {
    await expect(rival.sessions.get(session.id)).rejects.toMatchObject({ statusCode: 404 });
    await expect(rival.sessions.stop(session.id)).rejects.toMatchObject({ statusCode: 404 });
    await expect(rival.computerAction.click(session as never, 80, 40)).rejects.toMatchObject({ statusCode: 404 });
    const other = await fetch(`${stack.gateway.url}/api/session/${session.id}/recording-url`, {
      headers: { "x-api-key": stack.keys.rival! },
    });
    expect(other.status).toBe(404);
    expect(await other.json()).toMatchObject({ code: "not_found" });
    expect((await acme.sessions.get(session.id)).status).toBe("active");
  });

  // A refused upgrade carries the same JSON error as the same request over plain HTTP (where `?token=` is not taken:
  // plain HTTP sends the token as a bearer header).
  async function refusal(url: string, headers: Record<string, string> = {}) {
    const ws = await tryUpgrade(url.replace("http", "ws"), headers);
    const u = new URL(url);
    const token = u.searchParams.get("token");
    u.searchParams.delete("token");
    const plain = await fetch(u, { headers: token ? { ...headers, authorization: `Bearer ${token}` } : headers });
    const code = (await plain.json()).code;
    expect(ws.body?.code).toBe(code);
    expect(typeof ws.body?.message).toBe("string");
    return { status: ws.status, plainStatus: plain.status, code };
  }

  it("refuses a CDP connection with a missing, wrong or expired token, or another tenant's key or session", async () => {
    const base = `${stack.gateway.url}/devtools/browser/${session.id}`;
    expect(await refusal(base)).toEqual({ status: 401, plainStatus: 401, code: "token_missing" });
    expect(await refusal(`${base}?token=eyJhbGciOiJIUzI1NiJ9.e30.bad`)).toEqual({ status: 401, plainStatus: 401, code: "token_invalid" });
    const expired = await stack.gateway.gateway.services.tokens.mint({
      tenant: "acme",
      kind: "session",
      resource: session.id,
      scopes: ["cdp"],
      ttlSeconds: -30,
    });
    expect(await refusal(`${base}?token=${expired.token}`)).toEqual({ status: 401, plainStatus: 401, code: "token_expired" });
    expect(await refusal(base, { "x-api-key": stack.keys.rival! })).toEqual({ status: 404, plainStatus: 404, code: "not_found" });
    const elsewhere = await stack.gateway.gateway.services.tokens.mint({
      tenant: "acme",
      kind: "session",
      resource: "another-session",
      scopes: ["cdp"],
      ttlSeconds: 60,
    });
    expect(await refusal(`${base}?token=${elsewhere.token}`)).toMatchObject({ status: 404, code: "not_found" });
    const rivalToken = await stack.gateway.gateway.services.tokens.mint({
      tenant: "rival",
      kind: "session",
      resource: session.id,
      scopes: ["cdp"],
      ttlSeconds: 60,
    });
    expect(await refusal(`${base}?token=${rivalToken.token}`)).toMatchObject({ status: 404, code: "not_found" });
    // A valid token over plain HTTP (as a bearer header: `?token=` counts only on an upgrade) is told to upgrade.
    expect((await fetch(base, { headers: { authorization: `Bearer ${session.token}` } })).status).toBe(426);
    expect((await fetch(`${base}?token=${session.token}`)).status).toBe(401);
  });

  it("stops the session for its owner; the browser goes away and the detail says closed", async () => {
    const disconnected = new Promise((r) => browser.once("disconnected", r));
    expect(await acme.sessions.stop(session.id)).toEqual({ success: true });
    await disconnected;
    expect((await acme.sessions.get(session.id)).status).toBe("closed");
    expect((await acme.sessions.getActiveSessionsCount()).activeSessionsCount).toBe(0);
  });
});
