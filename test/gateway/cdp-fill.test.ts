// Browser credential fill over CDP (issue 57 item 4, docs/cdp-guard.md): a tenant secret put through the tenant API is
// typed into a local login page by `Tollgate.fillSecret`, sent by playwright-core over CDP through the gateway to the
// emulator's real Chromium; the page signs in, while a capture of every CDP message the client received (a recording
// proxy between playwright and the gateway) holds no trace of the value, in any spelling, nor do the gateway's logs.
// A page on another origin is refused, and reads that cannot be filtered (screenshots) are refused until the page
// navigates.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { chromium, type Browser, type Page } from "playwright-core";
import WebSocket, { WebSocketServer } from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

// Spaces, a slash, plus, equals, an accent and a bang: every encoding differs from the plain text.
const SECRET = "s3cr3t P@ss/w+rd=é!Kx9";
const LOGIN = `<!doctype html><meta charset="utf-8"><title>login</title>
<form method="post" action="/signin"><input id="user" name="user"><input id="pw" name="pw" autocomplete="off">
<button id="go" type="submit">Sign in</button></form>
<script>pw.addEventListener("input", () => console.log("typed", pw.value, btoa(unescape(encodeURIComponent(pw.value)))));</script>`;

let stack: SessionGateway;
let web: Server;
let allowed: string;
let other: string;
let hb: Hyperbrowser;
let session: Awaited<ReturnType<Hyperbrowser["sessions"]["create"]>>;
let pw: Browser;
let proxy: WebSocketServer;
const received: string[] = [];
const signins: Array<{ user: string | null; ok: boolean }> = [];

/** A recording proxy: playwright connects here; every message from the gateway to the client is kept. */
async function recordingProxy(target: string): Promise<string> {
  proxy = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((r) => proxy.once("listening", r));
  proxy.on("connection", (client, req) => {
    const up = new WebSocket(new URL(req.url!, target.replace(/^ws/, "http")).href.replace(/^http/, "ws"));
    const early: string[] = [];
    client.on("message", (d) => (up.readyState === WebSocket.OPEN ? up.send(d.toString()) : early.push(d.toString())));
    up.on("open", () => {
      for (const m of early.splice(0)) up.send(m);
    });
    up.on("message", (d) => {
      received.push(d.toString());
      client.send(d.toString());
    });
    up.on("close", () => client.close());
    client.on("close", () => up.close());
  });
  const port = (proxy.address() as AddressInfo).port;
  const u = new URL(target);
  return `ws://127.0.0.1:${port}${u.pathname}${u.search}`;
}

beforeAll(async () => {
  web = createServer((req, res) => {
    if (req.method === "POST" && req.url === "/signin") {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        const form = new URLSearchParams(body);
        const ok = form.get("pw") === SECRET;
        signins.push({ user: form.get("user"), ok });
        res.writeHead(ok ? 200 : 401, { "content-type": "text/html" }).end(`<!doctype html><title>${ok ? "signed in" : "wrong"}</title>`);
      });
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(LOGIN);
  });
  await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
  const port = (web.address() as AddressInfo).port;
  allowed = `http://127.0.0.1:${port}`;
  other = `http://localhost:${port}`;
  stack = await startSessionGateway([{ id: "acme" }]);
  const put = await fetch(`${stack.gateway.url}/_tollgate/secrets/SITE_PASSWORD`, {
    method: "PUT",
    headers: { "x-api-key": stack.keys.acme!, "content-type": "application/json" },
    body: JSON.stringify({ value: SECRET, hosts: [`127.0.0.1:${port}`] }),
  });
  expect(put.status).toBeLessThan(300);
  hb = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
  session = await hb.sessions.create({});
  pw = await chromium.connectOverCDP(await recordingProxy(session.wsEndpoint));
}, 60_000);

afterAll(async () => {
  await pw?.close().catch(() => {});
  await hb?.sessions.stop(session.id).catch(() => {});
  await stack?.close();
  proxy?.close();
  web?.closeAllConnections();
  await new Promise((r) => web?.close(r));
});

async function fill(page: Page, name: string, selector: string) {
  const cdp = await page.context().newCDPSession(page);
  try {
    return await cdp.send("Tollgate.fillSecret" as "Browser.getVersion", { name, selector } as never);
  } finally {
    await cdp.detach().catch(() => {});
  }
}

/** Reads a field's value over a second, raw CDP connection through the gateway. */
async function readOnSecondConnection(url: string, selector: string): Promise<unknown> {
  const ws = new WebSocket(session.wsEndpoint);
  const answers = new Map<number, (m: any) => void>();
  ws.on("message", (d) => {
    const m = JSON.parse(d.toString());
    answers.get(m.id)?.(m);
  });
  await new Promise((r) => ws.once("open", r));
  let n = 0;
  const send = (method: string, params: object = {}, sessionId?: string) =>
    new Promise<any>((r) => {
      const id = ++n;
      answers.set(id, r);
      ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  try {
    const targets = (await send("Target.getTargets")).result.targetInfos as Array<{ targetId: string; url: string }>;
    const target = targets.find((t) => t.url === url)!;
    const sid = (await send("Target.attachToTarget", { targetId: target.targetId, flatten: true })).result.sessionId;
    const read = await send(
      "Runtime.evaluate",
      { expression: `document.querySelector(${JSON.stringify(selector)}).value`, returnByValue: true },
      sid,
    );
    return read.result.result.value;
  } finally {
    ws.close();
  }
}

/** Every spelling of the secret a capture could hold, computed here independently of the gateway. */
function traces(text: string): string[] {
  const found: string[] = [];
  const spellings = [
    SECRET,
    encodeURIComponent(SECRET),
    new URLSearchParams({ x: SECRET }).toString().slice(2),
    JSON.stringify(SECRET).slice(1, -1),
  ];
  for (const s of spellings) if (text.includes(s)) found.push(s);
  // Any base64 run that decodes to something holding the secret.
  for (const run of text.match(/[A-Za-z0-9+/]{12,}={0,2}/g) ?? []) {
    for (let cut = 0; cut < 4; cut++) {
      const piece = run.slice(cut, run.length - ((run.length - cut) % 4));
      const decoded = Buffer.from(piece, "base64").toString("utf8");
      if (spellings.some((s) => decoded.includes(s))) found.push(`base64:${run.slice(0, 24)}`);
    }
  }
  return found;
}

describe("Tollgate.fillSecret over CDP, through the gateway (Node)", () => {
  it("signs into a local page with a secret the client never receives", async () => {
    const page = await pw.contexts()[0]!.newPage();
    const consoleLines: string[] = [];
    page.on("console", (m) => consoleLines.push(m.text()));
    await page.goto(`${allowed}/login`);
    expect(await fill(page, "SITE_PASSWORD", "#pw")).toMatchObject({ filled: true, name: "SITE_PASSWORD", origin: allowed });

    // The page's own script saw the value and logged it, plain and in base64: the client got the log, redacted.
    await expect.poll(() => consoleLines.length).toBeGreaterThan(0);
    expect(consoleLines.join("\n")).toContain("[redacted by tollgate]");
    // A direct read of the field comes back redacted.
    expect(await page.evaluate(() => (document.querySelector("#pw") as HTMLInputElement).value)).toBe("[redacted by tollgate]");
    // The field is drawn as discs (screenshots elsewhere, the live view), and screenshots here are refused.
    expect(await page.evaluate(() => getComputedStyle(document.querySelector("#pw")!).getPropertyValue("-webkit-text-security"))).toBe(
      "disc",
    );
    await expect(page.screenshot()).rejects.toThrow(/refused on this page after Tollgate.fillSecret/);
    // Another CDP connection to the same browser reads the field redacted too (its guard knows the tenant's values).
    expect(await readOnSecondConnection(`${allowed}/login`, "#pw")).toBe("[redacted by tollgate]");

    await page.fill("#user", "alice");
    await Promise.all([page.waitForURL(`${allowed}/signin`), page.click("#go")]);
    expect(await page.title()).toBe("signed in");
    expect(signins.at(-1)).toEqual({ user: "alice", ok: true });
    // A new document: screenshots are allowed again.
    expect((await page.screenshot()).length).toBeGreaterThan(100);

    // Every CDP message the client received: no trace of the value in any spelling (the login POST's body included).
    expect(received.length).toBeGreaterThan(50);
    expect(received.some((m) => m.includes("Network.requestWillBeSent") && m.includes("/signin"))).toBe(true);
    expect(traces(received.join("\n"))).toEqual([]);
    // Nor in the gateway's logs, which name the secret and the origin only.
    expect(traces(stack.logs.join("\n"))).toEqual([]);
    expect(stack.logs.some((l) => l.includes("cdp secret filled") && l.includes("SITE_PASSWORD"))).toBe(true);
    const audit = await stack.gateway.gateway.services.stores.audit.list({ limit: 50 });
    expect(audit.find((a) => a.action === "cdp.secret.fill")).toMatchObject({
      actor: "acme",
      after: { secret: "SITE_PASSWORD", origin: allowed },
    });
    expect(traces(JSON.stringify(audit))).toEqual([]);
    await page.close();
  });

  it("refuses a page on another origin, an unknown secret and a selector that is no field; nothing is typed", async () => {
    const page = await pw.contexts()[0]!.newPage();
    await page.goto(`${other}/login`);
    await expect(fill(page, "SITE_PASSWORD", "#pw")).rejects.toThrow(
      /is not one of the hosts of secret "SITE_PASSWORD"; nothing was typed/,
    );
    expect(await page.inputValue("#pw")).toBe("");
    await page.goto(`${allowed}/login`);
    await expect(fill(page, "NOPE", "#pw")).rejects.toThrow(/No tenant secret named "NOPE"/);
    await expect(fill(page, "SITE_PASSWORD", "#missing")).rejects.toThrow(/No element matches/);
    await expect(fill(page, "SITE_PASSWORD", "#go")).rejects.toThrow(/not a text field/);
    expect(await page.inputValue("#pw")).toBe("");
    // Reads were never restricted on this page (nothing was filled).
    expect((await page.screenshot()).length).toBeGreaterThan(100);
    await page.close();
  });
});
