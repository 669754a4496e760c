// Keyless access to a browser session: a tenant mints a scoped token, an untrusted client uses it with no key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { tryUpgrade } from "../helpers/ws-probe.js";

describe("keyless session tokens", () => {
  let stack: SessionGateway;
  let acme: Hyperbrowser;
  let sessionId: string;
  let rivalSessionId: string;

  beforeAll(async () => {
    stack = await startSessionGateway([{ id: "acme" }, { id: "rival" }], { tokens: { ttlSeconds: 600 } });
    acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
    sessionId = (await acme.sessions.create()).id;
    rivalSessionId = (await new Hyperbrowser({ apiKey: stack.keys.rival!, baseUrl: stack.gateway.url }).sessions.create()).id;
  });
  afterAll(async () => {
    await stack?.close();
  });

  const mint = (body: unknown, key = stack.keys.acme!) =>
    fetch(`${stack.gateway.url}/_tollgate/tokens`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const action = (token: string, body: unknown = { action: "screenshot" }) =>
    fetch(`${stack.gateway.url}/_tollgate/computer-action/${sessionId}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("mints a session token with its expiry, jti and ready-to-use gateway endpoints", async () => {
    const r = await mint({ kind: "session", sessionId, scopes: ["cdp"], ttlSeconds: 120 });
    expect(r.status).toBe(201);
    const t = await r.json();
    expect(t).toMatchObject({
      kind: "session",
      resource: sessionId,
      scopes: ["cdp"],
      jti: expect.any(String),
      token: expect.stringMatching(/^eyJ/),
    });
    expect(Date.parse(t.expiresAt) - Date.now()).toBeGreaterThan(100_000);
    expect(Date.parse(t.expiresAt) - Date.now()).toBeLessThanOrEqual(121_000);
    expect(t.wsEndpoint).toBe(
      `${stack.gateway.url.replace("http", "ws")}/devtools/browser/${sessionId}?token=${encodeURIComponent(t.token)}`,
    );
    expect(t.computerActionEndpoint).toBeUndefined();
  });

  it("lets puppeteer-core drive the session with only the minted token, no key", async () => {
    const t = await (await mint({ kind: "session", sessionId, scopes: ["cdp"] })).json();
    const browser = await puppeteer.connect({ browserWSEndpoint: t.wsEndpoint, defaultViewport: null });
    try {
      const page = await browser.newPage();
      await page.setContent("<title>keyless</title>");
      expect(await page.title()).toBe("keyless");
    } finally {
      await browser.disconnect();
    }
  });

  it("allows nothing else: no computer actions without that scope, no control-plane or other session calls", async () => {
    const t = await (await mint({ kind: "session", sessionId, scopes: ["cdp"] })).json();
    const r = await action(t.token);
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "token_scope", requiredScope: "computer" });
    for (const [method, path] of [
      ["GET", `/api/session/${sessionId}`],
      ["PUT", `/api/session/${sessionId}/stop`],
      ["GET", "/api/sessions"],
      ["POST", "/api/session"],
    ]) {
      const res = await fetch(stack.gateway.url + path, { method, headers: { authorization: `Bearer ${t.token}` } });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
    const minted = await mint({ kind: "session", sessionId }, t.token);
    expect(minted.status).toBe(403);
    expect((await minted.json()).code).toBe("tenant_key_required");
    const other = `${stack.gateway.url.replace("http", "ws")}/devtools/browser/${rivalSessionId}?token=${encodeURIComponent(t.token)}`;
    expect((await tryUpgrade(other)).status).toBe(404);
  });

  it("performs computer actions with a token that has the computer scope, and no key", async () => {
    const t = await (await mint({ kind: "session", sessionId, scopes: ["computer"] })).json();
    expect(t.computerActionEndpoint).toBe(`${stack.gateway.url}/_tollgate/computer-action/${sessionId}`);
    const r = await action(t.token);
    expect(r.status).toBe(200);
    expect((await r.json()).success).toBe(true);
    expect((await tryUpgrade(`${stack.gateway.url.replace("http", "ws")}/devtools/browser/${sessionId}?token=${t.token}`)).status).toBe(
      403,
    );
  });

  it("stops working at once when revoked, by jti or by the token itself, also for new CDP connections", async () => {
    const a = await (await mint({ kind: "session", sessionId })).json();
    expect((await action(a.token)).status).toBe(200);
    const del = await fetch(`${stack.gateway.url}/_tollgate/tokens/${a.jti}`, {
      method: "DELETE",
      headers: { "x-api-key": stack.keys.acme! },
    });
    expect(await del.json()).toEqual({ revoked: true, jti: a.jti });
    const after = await action(a.token);
    expect(after.status).toBe(401);
    expect((await after.json()).code).toBe("token_revoked");
    expect((await tryUpgrade(a.wsEndpoint)).status).toBe(401);

    const b = await (await mint({ kind: "session", sessionId })).json();
    const byToken = await fetch(`${stack.gateway.url}/_tollgate/tokens/revoke`, {
      method: "POST",
      headers: { "x-api-key": stack.keys.acme!, "content-type": "application/json" },
      body: JSON.stringify({ token: b.token }),
    });
    expect(byToken.status).toBe(200);
    expect((await action(b.token)).status).toBe(401);
  });

  it("cuts an open CDP connection when its token is revoked", async () => {
    const t = await (await mint({ kind: "session", sessionId, scopes: ["cdp"] })).json();
    const browser = await puppeteer.connect({ browserWSEndpoint: t.wsEndpoint, defaultViewport: null });
    const disconnected = new Promise<number>((resolve) => browser.once("disconnected", () => resolve(Date.now())));
    const page = await browser.newPage();
    expect(await page.evaluate(() => 1 + 1)).toBe(2);
    const revokedAt = Date.now();
    await fetch(`${stack.gateway.url}/_tollgate/tokens/${t.jti}`, { method: "DELETE", headers: { "x-api-key": stack.keys.acme! } });
    const at = await Promise.race([disconnected, new Promise<number>((r) => setTimeout(() => r(-1), 10_000))]);
    expect(at).toBeGreaterThan(0);
    expect(at - revokedAt).toBeLessThan(5_000);
  });

  it("lets only the minting tenant revoke a token", async () => {
    const t = await (await mint({ kind: "session", sessionId })).json();
    const r = await fetch(`${stack.gateway.url}/_tollgate/tokens/${t.jti}`, {
      method: "DELETE",
      headers: { "x-api-key": stack.keys.rival! },
    });
    expect(r.status).toBe(404);
    expect((await action(t.token)).status).toBe(200);
  });

  it("refuses an expired token with token_expired", async () => {
    const t = await stack.gateway.gateway.services.tokens.mint({
      tenant: "acme",
      kind: "session",
      resource: sessionId,
      scopes: ["computer"],
      ttlSeconds: -5,
      keyless: true,
    });
    const r = await action(t.token);
    expect(r.status).toBe(401);
    expect((await r.json()).code).toBe("token_expired");
  });

  it("refuses to mint for another tenant's session, an unknown one, or a sandbox the tenant does not own", async () => {
    for (const body of [
      { kind: "session", sessionId: rivalSessionId },
      { kind: "session", sessionId: "nope" },
      { kind: "sandbox", sandboxId: "sbx_nope", scopes: ["terminal"] },
    ]) {
      const r = await mint(body);
      expect(r.status).toBe(404);
      expect((await r.json()).code).toBe("not_found");
    }
  });

  it.each([
    [{ kind: "session", sessionId: "x", ttlSeconds: 601 }, 400, "token_ttl_too_long"],
    [{ kind: "session", sessionId: "x", scopes: ["terminal"] }, 400, "invalid_token_request"],
    [{ kind: "sandbox", sandboxId: "x", scopes: [] }, 400, "invalid_token_request"],
    [{ kind: "search", cap: "ten dollars" }, 400, "invalid_token_request"],
    [{ kind: "search", cap: "0" }, 400, "invalid_token_request"],
    [{ kind: "wallet" }, 400, "invalid_token_request"],
  ])("refuses a bad mint request %j with a JSON error naming the field", async (body, status, code) => {
    const r = await mint(body);
    expect(r.status).toBe(status);
    const j = await r.json();
    expect(j.code).toBe(code);
    expect(typeof j.message).toBe("string");
  });

  it("mints a search token carrying its spend cap in atomic units", async () => {
    const r = await mint({ kind: "search", cap: "0.05", ttlSeconds: 60 });
    const t = await r.json();
    expect(t).toMatchObject({ kind: "search", scopes: ["search"], cap: "0.05", capAtomic: "50000" });
    const verified = await stack.gateway.gateway.services.tokens.verify(t.token);
    expect(verified).toMatchObject({ tenant: "acme", kind: "search", cap: 50_000n, keyless: true });
  });

  it("needs a tenant key to mint at all", async () => {
    const r = await fetch(`${stack.gateway.url}/_tollgate/tokens`, { method: "POST", body: JSON.stringify({ kind: "search", cap: "1" }) });
    expect(r.status).toBe(401);
  });
});
