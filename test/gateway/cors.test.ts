// CORS for browser front-ends: a page on a configured origin calls the gateway with a keyless token (real Chromium);
// preflights are answered without credentials, and only configured origins are granted anything.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import puppeteer, { type Browser } from "puppeteer-core";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { gatewayCall, startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";

let s: SandboxStack;
let sbx: Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;
let allowedPage: Server;
let otherPage: Server;
let allowed: string;
let other: string;
let token: string;

/** A one-page site: the origin a browser front-end would be served from. */
async function pageServer(): Promise<[Server, string]> {
  const srv = createServer((_q, r) => r.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>front-end</title>"));
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return [srv, `http://127.0.0.1:${(srv.address() as AddressInfo).port}`];
}

beforeAll(async () => {
  [allowedPage, allowed] = await pageServer();
  [otherPage, other] = await pageServer();
  s = await startSandboxStack({ server: { cors: { origins: [allowed], maxAgeSeconds: 120 } } });
  sbx = await s.alice.sandboxes.create({ imageName: "node" });
  const minted = await gatewayCall(s, "POST", "/_tollgate/tokens", {
    headers: { "x-api-key": s.keys.alice },
    body: JSON.stringify({ kind: "sandbox", sandboxId: sbx.id, scopes: ["runtime"] }),
  });
  token = minted.json.token;
});
afterAll(async () => {
  await sbx?.stop().catch(() => {});
  await s?.close();
  allowedPage?.close();
  otherPage?.close();
});

const preflight = (origin: string, path = `/sandbox/${sbx.id}/exec`) =>
  gatewayCall(s, "OPTIONS", path, {
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
  });

describe("preflights", () => {
  it("answers a configured origin's preflight at once, with no key or token, and allows no cookies", async () => {
    for (const path of [`/sandbox/${sbx.id}/exec`, "/api/sandboxes", "/_tollgate/usage", "/x402/web/search"]) {
      const res = await preflight(allowed, path);
      expect(res.status, path).toBe(204);
      expect(res.headers["access-control-allow-origin"]).toBe(allowed);
      expect(String(res.headers["access-control-allow-headers"])).toMatch(/authorization/i);
      expect(String(res.headers["access-control-allow-methods"])).toContain("POST");
      expect(res.headers["access-control-max-age"]).toBe("120");
      expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
      expect(String(res.headers["vary"])).toMatch(/origin/i);
    }
  });

  it("grants nothing to an origin that is not configured", async () => {
    for (const origin of [other, "null", `${allowed}.evil.example`, allowed.replace("http:", "https:")]) {
      const res = await preflight(origin);
      expect(res.status, origin).not.toBe(204);
      expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    }
  });
});

describe("calls from a configured origin", () => {
  it("carry Access-Control-Allow-Origin on successes and on errors, so the page can read {message, code}", async () => {
    const ok = await gatewayCall(s, "POST", `/sandbox/${sbx.id}/exec`, {
      headers: { origin: allowed, authorization: `Bearer ${token}` },
      body: JSON.stringify({ command: "echo hi" }),
    });
    expect(ok.status).toBe(200);
    expect(ok.headers["access-control-allow-origin"]).toBe(allowed);
    expect(String(ok.headers["access-control-expose-headers"])).toContain("x-request-id");
    const denied = await gatewayCall(s, "POST", `/sandbox/${sbx.id}/exec`, { headers: { origin: allowed }, body: "{}" });
    expect(denied.status).toBe(401);
    expect(denied.headers["access-control-allow-origin"]).toBe(allowed);
    expect(denied.json.code).toBe("token_missing");
  });
});

describe("a real browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await puppeteer.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Runs fetch() in a page on `origin` against the gateway: what the front-end can read, or the browser's refusal. */
  async function fetchFrom(origin: string): Promise<{ status?: number; body?: any; error?: string }> {
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      return await page.evaluate(
        async (url, bearer) => {
          try {
            const r = await fetch(url, {
              method: "POST",
              headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
              body: JSON.stringify({ command: "echo from-the-browser" }),
            });
            return { status: r.status, body: await r.json() };
          } catch (e) {
            return { error: String(e) };
          }
        },
        `http://127.0.0.1:${s.gw.port}/sandbox/${sbx.id}/exec`,
        token,
      );
    } finally {
      await page.close();
    }
  }

  it("a front-end on a configured origin runs a command with a keyless token", async () => {
    const r = await fetchFrom(allowed);
    expect(r.error).toBeUndefined();
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).toContain("from-the-browser\\n");
  });

  it("a page on any other origin cannot read the answer", async () => {
    const r = await fetchFrom(other);
    expect(r.error).toMatch(/TypeError|Failed to fetch/);
  });
});
