import { Agent, request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashTenantKey, generateTenantKey } from "../../src/identity/tenants.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";
import { startTestGateway } from "../helpers/gateway.js";

const UPSTREAM_KEY = "up_live_" + "k".repeat(24);
const WALLET_KEY = ("0x" + "7".repeat(64)) as `0x${string}`;
const TOKEN_SECRET = "s".repeat(40);

describe("tenants, errors, request ids and logs (Node gateway over real sockets)", () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  const keys = { good: generateTenantKey(), expired: generateTenantKey(), disabled: generateTenantKey(), searchOnly: generateTenantKey() };

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    gw = await startTestGateway(
      {
        upstream: { baseUrl: upstream.url },
        tenants: [
          {
            id: "acme",
            keys: [
              { hash: await hashTenantKey(keys.good) },
              { hash: await hashTenantKey(keys.expired), expiresAt: "2020-01-01T00:00:00Z" },
            ],
          },
          { id: "off", enabled: false, keys: [{ hash: await hashTenantKey(keys.disabled) }] },
          { id: "searcher", scopes: ["search"], keys: [{ hash: await hashTenantKey(keys.searchOnly) }] },
        ],
      },
      { upstreamApiKey: UPSTREAM_KEY, walletKey: WALLET_KEY, tokenSecret: TOKEN_SECRET },
    );
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(gw.url + path, { headers });

  it("answers its own health check without a key, under a prefix the upstream never uses", async () => {
    const r = await get("/_tollgate/health");
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ status: "ok", service: "tollgate" });
  });

  it("accepts a valid key as x-api-key, as the SDK sends it", async () => {
    const r = await get("/api/sandboxes", { "x-api-key": keys.good });
    expect(r.status).toBe(200);
  });

  it("accepts a valid key as Authorization: Bearer", async () => {
    const r = await get("/_tollgate/whoami", { authorization: `Bearer ${keys.good}` });
    expect(await r.json()).toEqual({ tenant: "acme", scopes: ["search", "sessions", "sandboxes", "jobs", "agents"] });
  });

  it.each([
    ["missing", {}, "unauthorized"],
    ["wrong", { "x-api-key": "tg_not-a-real-key-at-all-000000" }, "invalid_api_key"],
    ["expired", { "x-api-key": keys.expired }, "api_key_expired"],
    ["disabled", { "x-api-key": keys.disabled }, "tenant_disabled"],
  ])("refuses a %s key with 401 and a JSON {message, code}", async (_name, headers, code) => {
    const r = await get("/api/sandboxes", headers as Record<string, string>);
    expect(r.status).toBe(401);
    expect(r.headers.get("content-type")).toMatch(/application\/json/);
    const body = await r.json();
    expect(body.code).toBe(code);
    expect(typeof body.message).toBe("string");
  });

  it("refuses a route outside the key's scopes with 403 missing_scope", async () => {
    const r = await get("/api/sandboxes", { "x-api-key": keys.searchOnly });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "missing_scope", requiredScope: "sandboxes" });
  });

  it("keeps the operator's team credit balance and image catalog changes to admins", async () => {
    const r = await get("/api/team/credit-info", { "x-api-key": keys.good });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "missing_scope", requiredScope: "admin" });
  });

  it("injects the upstream API key and never forwards the tenant's key", async () => {
    await get("/api/images?page=2", { "x-api-key": keys.good });
    const last = upstream.seen.at(-1)!;
    expect(last.url).toBe("/api/images?page=2");
    expect(last.headers["x-api-key"]).toBe(UPSTREAM_KEY);
    expect(JSON.stringify(last.headers)).not.toContain(keys.good);
  });

  it("proxies a body sent with Expect: 100-continue, meeting the expectation itself (no Expect upstream, not a 502)", async () => {
    // Forwarded, the header made undici refuse the request (a 502), and each refusal cost a pooled upstream connection.
    const body = JSON.stringify({ name: "expecting" });
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const u = new URL(gw.url);
      const req = httpRequest(
        {
          host: u.hostname,
          port: u.port,
          method: "POST",
          path: "/api/profile",
          headers: { "x-api-key": keys.good, "content-type": "application/json", expect: "100-continue" },
        },
        (res) => {
          let out = "";
          res.on("data", (d) => (out += d));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: out }));
        },
      );
      req.on("error", reject);
      req.on("continue", () => req.end(body));
    });
    expect(status, text).toBe(200);
    const last = upstream.seen.at(-1)!;
    expect(last.url).toBe("/api/profile");
    expect(last.body).toBe(body);
    expect(last.headers.expect).toBeUndefined();
  });

  it("keeps the connection open after a request whose body it read whole", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (path: string, body?: string) =>
      new Promise<{ status: number; connection?: string; reused: boolean }>((resolve, reject) => {
        const u = new URL(gw.url);
        const headers = { "x-api-key": keys.good, "content-type": "application/json" };
        const req = httpRequest({ host: u.hostname, port: u.port, method: body ? "POST" : "GET", path, headers, agent }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, reused: req.reusedSocket }));
        });
        req.on("error", reject);
        req.end(body);
      });
    const first = await send("/api/profile", JSON.stringify({ name: "kept" }));
    expect(first).toMatchObject({ status: 200, connection: "keep-alive" });
    expect(await send("/_tollgate/health")).toEqual({ status: 200, connection: "keep-alive", reused: true });
    agent.destroy();
  });

  it("propagates the client's x-request-id upstream and back", async () => {
    const r = await get("/api/images", { "x-api-key": keys.good, "x-request-id": "req-abc.123" });
    expect(r.headers.get("x-request-id")).toBe("req-abc.123");
    expect(upstream.seen.at(-1)!.headers["x-request-id"]).toBe("req-abc.123");
  });

  it("generates a request id when the client sends none (or an unsafe one), also on errors", async () => {
    const r = await get("/api/sandboxes", { "x-request-id": "bad id\twith spaces" });
    expect(r.status).toBe(401);
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers paths it does not front with a JSON 404 route_not_fronted naming method and path, and forwards nothing", async () => {
    const before = upstream.seen.length;
    for (const path of ["/nope", "/api/not-a-thing", "/api/snapshots/x/y"]) {
      const r = await get(path, { "x-api-key": keys.good });
      expect(r.status).toBe(404);
      expect(await r.json()).toMatchObject({ code: "route_not_fronted", method: "GET", path });
    }
    expect(upstream.seen.length).toBe(before);
  });

  it("writes one structured line per request with tenant, route, status and duration", async () => {
    await get("/api/sandboxes", { "x-api-key": keys.good, "x-request-id": "log-line-check" });
    const line = gw.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === "log-line-check");
    expect(line).toMatchObject({ msg: "request", tenant: "acme", method: "GET", path: "/api/sandboxes", status: 200 });
    expect(typeof line.durationMs).toBe("number");
  });

  it("never writes a secret from the config or a request into the log", async () => {
    await get("/api/sandboxes?token=querysecret123456&x=1", {
      "x-api-key": keys.good,
      authorization: "Bearer bearersecret987654321",
      "payment-signature": "eyJzaWduYXR1cmUiOiIweGRlYWRiZWVmIn0",
    });
    await get("/_tollgate/whoami", { authorization: `Bearer ${keys.good}` });
    gw.gateway.logger.info("probe", {
      note: `key ${UPSTREAM_KEY} wallet ${WALLET_KEY} secret ${TOKEN_SECRET}`,
      headers: { "x-api-key": keys.good },
    });
    const all = gw.logs.join("\n");
    for (const secret of [
      UPSTREAM_KEY,
      WALLET_KEY,
      TOKEN_SECRET,
      keys.good,
      "querysecret123456",
      "bearersecret987654321",
      "eyJzaWduYXR1cmUiOiIweGRlYWRiZWVmIn0",
    ]) {
      expect(all).not.toContain(secret);
    }
    expect(all).toContain("probe");
  });
});
