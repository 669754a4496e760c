// The navigation floor on CDP (issue 57 item 5, docs/cdp-guard.md): a tenant whose policy denies a host connects
// playwright-core over CDP through the gateway to the emulator's real Chromium; page script, a redirect and
// window.open reaching the denied host close the target, and the closing is logged and audited; an allowed origin works.
// The local web server answers on 127.0.0.1 (allowed) and, by the name "localhost", on the denied host.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { OWN_ID_BASE } from "../../src/sessions/cdp-guard-rules.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

let stack: SessionGateway;
let web: Server;
let allowed: string;
let denied: string;
let hb: Hyperbrowser;
let session: Awaited<ReturnType<Hyperbrowser["sessions"]["create"]>>;
let pw: Browser;
const hits: string[] = [];

beforeAll(async () => {
  web = createServer((req, res) => {
    hits.push(`${req.headers.host}${req.url}`);
    if (req.url === "/redirect") return res.writeHead(302, { location: `${denied}/landing` }).end();
    res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><title>page ${req.url}</title><p>hello</p>`);
  });
  await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
  const port = (web.address() as AddressInfo).port;
  allowed = `http://127.0.0.1:${port}`;
  denied = `http://localhost:${port}`;
  stack = await startSessionGateway([{ id: "acme", policy: { domains: { deny: ["localhost"] } } }]);
  hb = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
  session = await hb.sessions.create({});
  pw = await chromium.connectOverCDP(session.wsEndpoint);
}, 60_000);

afterAll(async () => {
  await pw?.close().catch(() => {});
  await hb?.sessions.stop(session.id).catch(() => {});
  await stack?.close();
  web?.closeAllConnections();
  await new Promise((r) => web?.close(r));
});

async function openAllowed(): Promise<Page> {
  const page = await pw.contexts()[0]!.newPage();
  await page.goto(`${allowed}/start`);
  return page;
}

/** How many closings the audit log holds. */
async function closings(): Promise<number> {
  const audit = await stack.gateway.gateway.services.stores.audit.list({ limit: 100 });
  return audit.filter((a) => a.action === "cdp.navigation.closed").length;
}

/** Resolves true when the page closes within `ms`. */
function closesWithin(page: Page, ms: number): Promise<boolean> {
  if (page.isClosed()) return Promise.resolve(true);
  return Promise.race([
    page.waitForEvent("close", { timeout: ms }).then(
      () => true,
      () => page.isClosed(),
    ),
  ]);
}

describe("the navigation floor on CDP, through the gateway (Node)", () => {
  it("lets a page on an allowed origin work, and keeps it open", async () => {
    const page = await openAllowed();
    expect(await page.title()).toBe("page /start");
    expect(await page.evaluate(() => 6 * 7)).toBe(42);
    await page.evaluate(() => {
      location.href = "/next";
    });
    await page.waitForURL(`${allowed}/next`);
    expect(await closesWithin(page, 1500)).toBe(false);
    await page.close();
  });

  it("closes a page whose script navigates to a denied origin, and logs and audits it", async () => {
    const page = await openAllowed();
    const closed = closesWithin(page, 15_000);
    await page.evaluate((to) => {
      location.href = to;
    }, `${denied}/by-script?token=abc`);
    expect(await closed).toBe(true);
    const line = stack.logs.find((l) => l.includes("cdp target closed by the navigation floor"));
    expect(line).toBeDefined();
    const entry = JSON.parse(line!);
    expect(entry).toMatchObject({ tenant: "acme", sessionId: session.id, origin: denied, policy: "domains.deny", by: "tenant" });
    // The origin only: a path or query (which may carry tokens) is not logged.
    expect(line).not.toContain("by-script");
    const audit = await stack.gateway.gateway.services.stores.audit.list({ limit: 20 });
    expect(audit.find((a) => a.action === "cdp.navigation.closed")).toMatchObject({
      actor: "acme",
      target: `session:${session.id}`,
      after: { origin: denied, policy: "domains.deny", by: "tenant" },
    });
  });

  it("closes a page that a server redirect takes to a denied origin", async () => {
    const page = await openAllowed();
    const before = await closings();
    const closed = closesWithin(page, 15_000);
    await page.goto(`${allowed}/redirect`).catch(() => {});
    expect(await closed).toBe(true);
    await expect.poll(closings).toBe(before + 1);
  });

  it("closes a window.open popup on a denied origin, and leaves its opener open", async () => {
    const page = await openAllowed();
    const before = await closings();
    const popup = page.waitForEvent("popup", { timeout: 15_000 });
    await page.evaluate((to) => {
      window.open(to, "_blank");
    }, `${denied}/popup`);
    const p = await popup.catch(() => undefined);
    // The popup is closed (if playwright saw it at all before it went).
    if (p) expect(await closesWithin(p, 15_000)).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    const urls = pw
      .contexts()[0]!
      .pages()
      .map((x) => x.url());
    expect(urls.some((u) => u.startsWith(denied))).toBe(false);
    expect(page.isClosed()).toBe(false);
    expect(await page.evaluate(() => document.title)).toBe("page /start");
    await expect.poll(closings).toBe(before + 1);
    // The denied host was reached by the popup's own request (the floor acts when a navigation commits).
    expect(hits).toContain(`localhost:${new URL(allowed).port}/popup`);
  });

  it("refuses a client's command ids in the gateway's range, and keeps its own session out of sight", async () => {
    const ws = new WebSocket(session.wsEndpoint);
    const received: string[] = [];
    ws.on("message", (d) => received.push(d.toString()));
    await new Promise((r) => ws.once("open", r));
    const answer = (id: number) =>
      new Promise<any>((resolve) => {
        const check = () => {
          const m = received.map((t) => JSON.parse(t)).find((x) => x.id === id);
          if (m) resolve(m);
          else setTimeout(check, 20);
        };
        check();
      });
    ws.send(JSON.stringify({ id: OWN_ID_BASE + 5, method: "Browser.getVersion" }));
    expect((await answer(OWN_ID_BASE + 5)).error.message).toContain("reserved by the gateway");
    ws.send(JSON.stringify({ id: 1, method: "Browser.getVersion" }));
    expect((await answer(1)).result.product).toMatch(/Chrome/);
    ws.send(JSON.stringify({ id: 2, method: "Target.getTargets" }));
    await answer(2);
    ws.close();
    // Nothing of the gateway's own browser session reached this client: no answer to its ids, no attach event.
    expect(received.every((t) => !t.includes('"type":"browser"'))).toBe(true);
    expect(received.map((t) => JSON.parse(t).id)).toEqual([OWN_ID_BASE + 5, 1, 2]);
  });
});
