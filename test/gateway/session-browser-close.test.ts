// A client that closes the browser over CDP (puppeteer's browser.close(), CDP Browser.close) through the gateway: the
// session ends as closed, as a stop does (emulator/README.md, "Choices"), not as a crash; a reconnect is refused.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

let stack: SessionGateway;
let acme: Hyperbrowser;

beforeAll(async () => {
  stack = await startSessionGateway([{ id: "acme" }]);
  acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

describe("Browser.close through the gateway", { timeout: 60_000 }, () => {
  it("ends the session as closed; a reconnect is refused, and stop after it succeeds", async () => {
    const session = await acme.sessions.create();
    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    const page = await browser.newPage();
    expect(await page.evaluate(() => 1 + 1)).toBe(2);
    await browser.close();
    await expect.poll(async () => (await acme.sessions.get(session.id)).status, { timeout: 10_000 }).toBe("closed");
    const again = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint }).then(
      (b) => (b.disconnect(), "connected"),
      (e: Error) => e.message,
    );
    expect(again).toMatch(/409/);
    expect(await acme.sessions.stop(session.id)).toMatchObject({ success: true });
  });
});
