// One specification, run directly against the emulator and through the gateway: a session's browser, driven by a
// client over CDP (no request interception), reaches the local web by name as the job runners do — the home site over
// HTTP, the corpus hosts over HTTPS (and www.), while any other name fails to resolve.
import { expect, it } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { LocalSite } from "../../emulator/web/index.js";

export function sessionLocalWebSpec(client: () => Hyperbrowser): void {
  it("a session's browser opens http://web.emulator.test/, corpus pages over https, and no other name", async () => {
    const hb = client();
    const session = await hb.sessions.create();
    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    try {
      const page = await browser.newPage();
      const home = await page.goto("http://web.emulator.test/", { waitUntil: "domcontentloaded", timeout: 30_000 });
      expect(home?.status()).toBe(200);
      expect(await page.evaluate(() => document.links.length)).toBeGreaterThan(3);
      expect(await page.evaluate(() => location.href)).toBe("http://web.emulator.test/");

      const doc = new LocalSite().docs.find((d) => d.filetype === "html" && d.url.startsWith("https://"))!;
      const corpus = await page.goto(doc.url, { waitUntil: "domcontentloaded", timeout: 30_000 });
      expect(corpus?.status()).toBe(200);
      expect(await page.title()).toBe(doc.title);
      // The page is a secure context on its own name, as on the real web.
      expect(await page.evaluate(() => [location.protocol, window.isSecureContext])).toEqual(["https:", true]);
      const www = new URL(doc.url);
      www.hostname = `www.${www.hostname}`;
      expect((await page.goto(www.href, { waitUntil: "domcontentloaded", timeout: 30_000 }))?.status()).toBe(200);

      const missing = await page.goto("https://not-on-the-local-web.example/", { timeout: 30_000 }).then(
        () => "loaded",
        (e: Error) => e.message,
      );
      expect(missing).toMatch(/ERR_NAME_NOT_RESOLVED/);
    } finally {
      await browser.disconnect().catch(() => {});
      await hb.sessions.stop(session.id).catch(() => {});
    }
  }, 120_000);
}
