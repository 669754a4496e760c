// The gateway's live view (liveUrl → /_tollgate/live/<id>?ticket=…) opened in a real Chromium: frames drawn from the
// session's screencast through the gateway, a click and typed keys reaching the remote page, revocation and session
// stop closing it, tickets of other tenants or of another kind refused, and the page framed only where configured.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import WebSocket from "ws";
import { findChromium } from "../../emulator/sessions/chromium-binary.js";
import { startPageServer } from "../emulator/sessions-harness.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { tryUpgrade } from "../helpers/ws-probe.js";

const PAGE = `<!doctype html><html><head><title>Watched</title><style>
  body { margin: 0; background: #fff } #btn { position: absolute; left: 20px; top: 20px; width: 160px; height: 60px }
  #field { position: absolute; left: 20px; top: 120px; width: 300px; height: 30px }
</style></head><body><button id="btn">Click</button><input id="field">
<script>window.clicks = 0; btn.addEventListener("click", () => { window.clicks++; btn.textContent = "Clicked " + window.clicks; });</script></body></html>`;

type Detail = Awaited<ReturnType<Hyperbrowser["sessions"]["get"]>>;

/** Resolves when `fn` is truthy, polling; generous for a loaded machine. */
async function until<T>(fn: () => Promise<T> | T, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** An operator's own site that frames the live view. */
async function startFramingSite(): Promise<{ url: string; setFrame(src: string): void; close(): Promise<void> }> {
  let src = "about:blank";
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><iframe id="live" src="${src}" width="800" height="600"></iframe>`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setFrame: (s) => {
      src = s;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("live view through the gateway", () => {
  let stack: SessionGateway;
  let pages: { url: string; close(): Promise<void> };
  let site: Awaited<ReturnType<typeof startFramingSite>>;
  let acme: Hyperbrowser;
  let rival: Hyperbrowser;
  let session: Detail;
  let remote: Browser;
  let remotePage: Page;
  let viewer: Browser;

  /** Opens a live view URL in the viewer browser and waits for its first frame. */
  async function openLive(url: string): Promise<Page> {
    const v = await viewer.newPage();
    await v.setViewport({ width: 1000, height: 800 });
    await v.goto(url);
    await until(() => v.evaluate(() => Number(document.body.dataset.frames) > 0), "a first frame");
    return v;
  }

  /** Clicks the viewer's image at a point given in the remote page's CSS pixels. */
  async function clickAt(v: Page, x: number, y: number) {
    const [iw, ih] = await remotePage.evaluate(() => [innerWidth, innerHeight]);
    const box = (await (await v.$("#screen"))!.boundingBox())!;
    await v.mouse.click(box.x + (x / iw!) * box.width, box.y + (y / ih!) * box.height);
  }

  beforeAll(async () => {
    site = await startFramingSite();
    [stack, pages] = await Promise.all([
      startSessionGateway([{ id: "acme" }, { id: "rival" }], { config: { liveView: { frameAncestors: [site.url] } } }),
      startPageServer({ "/": PAGE }),
    ]);
    acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
    rival = new Hyperbrowser({ apiKey: stack.keys.rival!, baseUrl: stack.gateway.url });
    session = await acme.sessions.create({ screen: { width: 800, height: 600 } });
    remote = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    remotePage = (await remote.pages()).find((p) => p.url() === "about:blank") ?? (await remote.newPage());
    await remotePage.goto(`${pages.url}/`);
    viewer = await puppeteer.launch({
      executablePath: (await findChromium()).path,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
  }, 120_000);

  afterAll(async () => {
    await viewer?.close().catch(() => {});
    await remote?.disconnect().catch(() => {});
    await stack?.close();
    await pages?.close();
    await site?.close();
  });

  it("hands out a liveUrl on the gateway, with a ticket and no upstream host", async () => {
    const gw = stack.gateway.url;
    expect(session.liveUrl).toMatch(new RegExp(`^${gw}/_tollgate/live/${session.id}\\?ticket=eyJ`));
    const res = await fetch(session.liveUrl!);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    for (const host of [new URL(stack.emulator.controlUrl).host, stack.emulator.apiKey]) expect(html).not.toContain(host);
  });

  it("limits how long the link opens to the SDK's liveViewTtlSeconds, at most tokens.ttlSeconds", async () => {
    const lifetime = (d: Detail) => {
      const ticket = new URL(d.liveUrl!).searchParams.get("ticket")!;
      const claims = JSON.parse(Buffer.from(ticket.split(".")[1]!, "base64url").toString());
      return claims.exp - claims.iat;
    };
    expect(lifetime(await acme.sessions.get(session.id, { liveViewTtlSeconds: 60 }))).toBe(60);
    expect(lifetime(await acme.sessions.get(session.id, { liveViewTtlSeconds: 1_000_000 }))).toBe(900);
    expect(lifetime(await acme.sessions.get(session.id))).toBe(900);
  });

  it("draws the remote page from screencast frames relayed through the gateway", async () => {
    const v = await openLive(session.liveUrl!);
    expect(await v.evaluate(() => document.body.dataset.state)).toBe("live");
    const src = await v.$eval("#screen", (img) => (img as HTMLImageElement).src);
    expect(src.startsWith("data:image/jpeg;base64,")).toBe(true);
    await v.close();
  });

  it("forwards a click in the live view to the remote page, and typed keys into its field", async () => {
    const v = await openLive(session.liveUrl!);
    const before = await remotePage.evaluate(() => (window as any).clicks);
    await clickAt(v, 100, 50);
    await until(async () => (await remotePage.evaluate(() => (window as any).clicks)) === before + 1, "the click to reach the page");
    // The button's new label reaches the viewer as a later frame.
    await until(() => v.evaluate(() => Number(document.body.dataset.frames) > 1), "a frame after the click");
    await clickAt(v, 150, 135);
    await v.keyboard.type("hello live");
    await until(
      async () => (await remotePage.$eval("#field", (el) => (el as HTMLInputElement).value)) === "hello live",
      "the typed text to reach the field",
    );
    await v.close();
  });

  it("closes an open live view when its ticket is revoked, and the link stops opening", async () => {
    const fresh = await acme.sessions.get(session.id);
    const v = await openLive(fresh.liveUrl!);
    const ticket = new URL(fresh.liveUrl!).searchParams.get("ticket")!;
    const revoked = await fetch(`${stack.gateway.url}/_tollgate/tokens/revoke`, {
      method: "POST",
      headers: { "x-api-key": stack.keys.acme!, "content-type": "application/json" },
      body: JSON.stringify({ token: ticket }),
    });
    expect(revoked.status).toBe(200);
    await until(() => v.evaluate(() => document.body.dataset.state === "closed"), "the view to close");
    expect(await v.$eval("#status", (s) => s.textContent)).toMatch(/revoked/);
    const again = await fetch(fresh.liveUrl!);
    expect(again.status).toBe(401);
    expect(await again.json()).toMatchObject({ code: "ticket_revoked" });
    await v.close();
  });

  it("does not open another tenant's live view with a tenant's own ticket (404, page and socket)", async () => {
    const theirs = await rival.sessions.create();
    try {
      const rivalTicket = new URL(theirs.liveUrl!).searchParams.get("ticket")!;
      const url = `${stack.gateway.url}/_tollgate/live/${session.id}?ticket=${encodeURIComponent(rivalTicket)}`;
      const page = await fetch(url);
      expect(page.status).toBe(404);
      expect(await page.json()).toMatchObject({ code: "not_found" });
      const ws = await tryUpgrade(url.replace(/^http/, "ws").replace("?", "/ws?"));
      expect(ws.status).toBe(404);
      // The tenant's own CDP token is no live ticket either (scope cdp, not live).
      const cdpTicket = `${stack.gateway.url}/_tollgate/live/${session.id}?ticket=${encodeURIComponent(session.token)}`;
      expect((await fetch(cdpTicket)).status).toBe(404);
      const junk = await fetch(`${stack.gateway.url}/_tollgate/live/${session.id}?ticket=nope`);
      expect(junk.status).toBe(401);
      expect(await junk.json()).toMatchObject({ code: "ticket_invalid" });
    } finally {
      await rival.sessions.stop(theirs.id);
    }
  });

  it("screens the live socket: page code cannot be run through it", async () => {
    const fresh = await acme.sessions.get(session.id);
    const url = fresh.liveUrl!.replace(/^http/, "ws").replace("?", "/ws?");
    const ws = new WebSocket(url);
    await new Promise((r, j) => {
      ws.once("open", r);
      ws.once("error", j);
    });
    const reply = new Promise<any>((r) => ws.once("message", (d) => r(JSON.parse(String(d)))));
    ws.send(JSON.stringify({ id: 1, method: "Runtime.evaluate", params: { expression: "1+1" } }));
    expect(await reply).toMatchObject({ id: 1, error: { message: "Runtime.evaluate is not allowed in the live view." } });
    ws.close();
  });

  it("forwards no input for a session created with viewOnlyLiveView", async () => {
    const ro = await acme.sessions.create({ viewOnlyLiveView: true });
    try {
      const res = await fetch(ro.liveUrl!);
      expect(await res.text()).toContain('data-interactive="false"');
      const ws = new WebSocket(ro.liveUrl!.replace(/^http/, "ws").replace("?", "/ws?"));
      await new Promise((r, j) => {
        ws.once("open", r);
        ws.once("error", j);
      });
      const reply = new Promise<any>((r) => ws.once("message", (d) => r(JSON.parse(String(d)))));
      ws.send(JSON.stringify({ id: 7, method: "Input.dispatchMouseEvent", params: { type: "mousePressed", x: 1, y: 1 } }));
      expect(await reply).toMatchObject({ id: 7, error: { message: "This live view is view-only." } });
      ws.close();
    } finally {
      await acme.sessions.stop(ro.id);
    }
  });

  it("may be framed by the operator's configured origin only (CSP frame-ancestors)", async () => {
    const fresh = await acme.sessions.get(session.id);
    const csp = (await fetch(fresh.liveUrl!)).headers.get("content-security-policy")!;
    expect(csp).toContain(`frame-ancestors ${site.url}`);
    site.setFrame(fresh.liveUrl!);
    const host = await viewer.newPage();
    await host.goto(site.url);
    const frame = await until(async () => {
      const f = host.frames().find((x) => x.url().includes("/_tollgate/live/"));
      return f && (await f.evaluate(() => Number(document.body?.dataset.frames ?? 0) > 0).catch(() => false)) ? f : undefined;
    }, "the framed live view to draw");
    expect(await frame!.evaluate(() => document.body.dataset.state)).toBe("live");
    await host.close();
    // Served from another origin (the gateway's own address under another name), the same page is not framed.
    const other = `http://localhost:${new URL(site.url).port}`;
    const blocked = await viewer.newPage();
    await blocked.goto(other);
    await new Promise((r) => setTimeout(r, 3000)); // the allowed origin drew well within this
    const framed = blocked.frames().find((x) => x.url().includes("/_tollgate/live/"));
    const drew = framed ? await framed.evaluate(() => document.body?.dataset.frames ?? null).catch(() => null) : null;
    expect(drew).toBeNull();
    await blocked.close();
  });

  it("closes the live view when the session stops, and the link then answers 410 session_ended (page and socket)", async () => {
    const fresh = await acme.sessions.get(session.id);
    const v = await openLive(fresh.liveUrl!);
    await remote.disconnect();
    await acme.sessions.stop(session.id);
    await until(() => v.evaluate(() => document.body.dataset.state === "closed"), "the view to close on stop");
    expect(await v.$eval("#status", (s) => s.textContent)).toMatch(/ended/);
    await v.close();
    // The ticket died with its session, though the session's owner is remembered for days.
    const page = await fetch(fresh.liveUrl!);
    expect(page.status).toBe(410);
    expect(await page.json()).toMatchObject({ code: "session_ended", message: expect.stringMatching(/new live view link/) });
    const ws = await tryUpgrade(fresh.liveUrl!.replace(/^http/, "ws").replace("?", "/ws?"));
    expect(ws.status).toBe(410);
  });
});
