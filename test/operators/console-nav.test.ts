// The console's header on a phone-sized window, in a real Chromium (puppeteer-core) against the demo stack (issue 54):
// a long signed-in label (a 60-character tenant) never wraps the navigation. The nav stays one line (it scrolls
// sideways when it does not fit), the label is cut with an ellipsis and read whole in its title.
import type { Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleBrowser, startConsoleBrowser } from "../helpers/console-browser.js";

let harness: ConsoleBrowser;

beforeAll(async () => {
  harness = await startConsoleBrowser("console-nav", ["x402"]);
}, 180_000);

afterAll(async () => {
  await harness?.close();
});

/** The header's geometry: the nav's links' tops, one link's height, the nav's and the header's heights. */
const header = (page: Page) =>
  page.evaluate(() => {
    const links = [...document.querySelectorAll("header nav a")].map((a) => a.getBoundingClientRect());
    const nav = document.querySelector("header nav")!.getBoundingClientRect();
    const head = document.querySelector("header")!.getBoundingClientRect();
    const who = document.querySelector("header .who") as HTMLElement;
    return {
      tops: [...new Set(links.map((r) => Math.round(r.top)))],
      link: links[0]!.height,
      nav: nav.height,
      header: head.height,
      right: Math.max(...[...document.querySelector("header")!.children].map((el) => el.getBoundingClientRect().right)),
      who: { title: who.title, cut: who.scrollWidth > who.clientWidth, height: who.getBoundingClientRect().height },
    };
  });

describe("the console's navigation at 360 px", () => {
  it("stays one line beside a 60-character label, the label cut and titled", async () => {
    const id = `tenant-with-a-long-name-${"x".repeat(36)}`;
    expect(id).toHaveLength(60);
    const made = await fetch(`${harness.base}/_tollgate/admin/tenants`, {
      method: "POST",
      headers: { "x-api-key": harness.stack.tenants.ops!, "content-type": "application/json" },
      body: JSON.stringify({ id, scopes: ["search"] }),
    });
    expect(made.status).toBe(201);
    const { key } = (await made.json()) as { key: string };

    for (const signedIn of [key, harness.stack.tenants.ops!]) {
      const page = await harness.signIn(signedIn);
      await page.setViewport({ width: 360, height: 740 });
      await page.goto(harness.consoleUrl());
      const g = await header(page);
      expect(g.tops).toHaveLength(1); // every link on the one row
      expect(g.nav).toBeLessThanOrEqual(g.link + 20); // the nav one link high (room for a sideways scrollbar)
      expect(g.header).toBeLessThan(2 * g.link + 20); // nothing in the header went to a second line
      expect(g.right).toBeLessThanOrEqual(360); // the header's last item (sign out) within the window
      if (signedIn === key) {
        expect(g.who.title).toBe(`${id} (tenant)`);
        expect(g.who.cut).toBe(true);
      }
      await page.browserContext().close();
    }
  }, 120_000);
});
