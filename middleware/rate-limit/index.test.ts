// rateLimit on the gateway's real services (memory state, tenant directory, token service) with the clock driven
// through services.now: N answers a minute per tenant, then 429 rate_limited until the window turns.
import { requestId } from "../request-id/index.js";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { errorResponse, GatewayError } from "../../src/errors.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { Logger, Redactor } from "../../src/log.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { accessLog } from "../access-log/index.js";
import { OWN_ROWS } from "../../src/routing/own-rows.js";
import { identify } from "../identify/index.js";
import { rateLimit } from "./index.js";

/** 2026-03-10 12:00:10 UTC: ten seconds into a minute window. */
const T0 = Date.UTC(2026, 2, 10, 12, 0, 10);

const open: Gateway[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close(0);
});

async function setup() {
  const keys = { acme: generateTenantKey(), globex: generateTenantKey(), free: generateTenantKey() };
  const clock = { now: T0 };
  const config = parseConfig({
    server: { logLevel: "error" },
    tenants: [
      { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }], quotas: { requestsPerMinute: 3 } },
      { id: "globex", keys: [{ hash: await hashTenantKey(keys.globex) }], quotas: { requestsPerMinute: 1 } },
      { id: "free", keys: [{ hash: await hashTenantKey(keys.free) }] },
    ],
  });
  const g = createGateway(config, { secrets: { tokenSecret: "t".repeat(64) }, logSink: () => {}, now: () => clock.now });
  open.push(g);
  const lines: string[] = [];
  const a = new Hono();
  a.onError((err) => errorResponse(err));
  a.use(requestId()); // writes the limit's headers on the answer, as in the gateway
  a.use(accessLog(new Logger((l) => lines.push(l), "info", new Redactor())));
  // Stands in for identify() on table rows: a ticket caller (an open row) is set before the limit runs.
  a.use("/open/*", async (c, next) => {
    c.set("caller", { via: "ticket" });
    await next();
  });
  // identify() as an open own row runs it: a valid key or gateway token (header or ?token=) is the caller, else nobody.
  a.use("/_tollgate/*", identify(g.services, OWN_ROWS.find((r) => r.name === "own.health")!));
  a.use(rateLimit(g.services));
  let routeRuns = 0;
  a.all("*", (c) => {
    routeRuns++;
    if (c.req.path === "/_tollgate/refused") throw new GatewayError(404, "not_found", "Session nope not found");
    return c.json({ ok: true });
  });
  const call = (key?: string, path = "/_tollgate/usage") => a.request(path, { headers: key ? { "x-api-key": key } : {} });
  return { g, a, keys, clock, call, lines, runs: () => routeRuns };
}

describe("rateLimit", () => {
  it("names the limit on an answer a later step refused too, with nothing of its own after next()", async () => {
    const { keys, call } = await setup();
    const res = await call(keys.acme, "/_tollgate/refused");
    expect(res.status).toBe(404);
    expect(res.headers.get("ratelimit-limit")).toBe("3");
    expect(res.headers.get("ratelimit-remaining")).toBe("2");
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });

  it("answers a tenant's requestsPerMinute, saying the limit and what is left, then 429 rate_limited", async () => {
    const { keys, call, runs, lines } = await setup();
    for (const remaining of ["2", "1", "0"]) {
      const res = await call(keys.acme);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-limit")).toBe("3");
      expect(res.headers.get("ratelimit-remaining")).toBe(remaining);
    }
    const refused = await call(keys.acme);
    expect(refused.status).toBe(429);
    expect(runs()).toBe(3);
    expect(refused.headers.get("retry-after")).toBe("50"); // 10 s into the window
    expect(refused.headers.get("ratelimit-limit")).toBe("3");
    expect(refused.headers.get("ratelimit-remaining")).toBe("0");
    expect(await refused.json()).toEqual({
      message: "This tenant may make 3 requests per minute; retry in 50 s.",
      code: "rate_limited",
      limit: 3,
      windowSeconds: 60,
      remaining: 0,
      resetAt: "2026-03-10T12:01:00.000Z",
    });
    expect(runs()).toBe(3);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ status: 429, tenant: "acme" }); // the refusal's log line names whom
  });

  it("starts counting again when the window turns, and counts a Bearer key or a ?token= gateway token alike", async () => {
    const { g, keys, clock, call, a } = await setup();
    for (let i = 0; i < 3; i++) expect((await call(keys.acme)).status).toBe(200);
    clock.now = Date.UTC(2026, 2, 10, 12, 0, 59, 500);
    const late = await call(keys.acme);
    expect(late.status).toBe(429);
    expect(late.headers.get("retry-after")).toBe("1"); // never 0
    clock.now = Date.UTC(2026, 2, 10, 12, 1, 0);
    const next = await a.request("/_tollgate/usage", { headers: { authorization: `Bearer ${keys.acme}` } });
    expect(next.status).toBe(200);
    expect(next.headers.get("ratelimit-remaining")).toBe("2");
    // A gateway token counts against the tenant that minted it.
    const { token } = await g.services.tokens.mint({ tenant: "acme", kind: "search", scopes: ["search"], ttlSeconds: 600 });
    expect((await a.request(`/_tollgate/usage?token=${token}`)).headers.get("ratelimit-remaining")).toBe("1");
    expect(
      (await a.request("/_tollgate/usage", { headers: { authorization: `Bearer ${token}` } })).headers.get("ratelimit-remaining"),
    ).toBe("0");
    expect((await call(keys.acme)).status).toBe(429);
  });

  it("counts each tenant apart", async () => {
    const { keys, call } = await setup();
    expect((await call(keys.globex)).status).toBe(200);
    expect((await call(keys.globex)).status).toBe(429);
    const acme = await call(keys.acme);
    expect(acme.status).toBe(200);
    expect(acme.headers.get("ratelimit-remaining")).toBe("2");
  });

  it("lets through, uncounted and without headers, callers with no tenant, a bad key, or a tenant without a limit", async () => {
    const { keys, call, runs } = await setup();
    for (const key of [undefined, "tg_nobody", "eyJhbGciOiJIUzI1NiJ9.e30.bad", keys.free]) {
      for (let i = 0; i < 5; i++) {
        const res = await call(key);
        expect(res.status, String(key)).toBe(200);
        expect(res.headers.get("ratelimit-limit")).toBeNull();
      }
    }
    expect(runs()).toBe(20);
  });

  it("leaves ticket callers of open rows alone, even when they also send a key", async () => {
    const { keys, call } = await setup();
    for (let i = 0; i < 3; i++) {
      const res = await call(keys.globex, "/open/cdp");
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-limit")).toBeNull();
    }
    expect((await call(keys.globex)).status).toBe(200); // and they did not use up the tenant's window
  });
});
