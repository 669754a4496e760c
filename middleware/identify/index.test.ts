// identify() on the gateway's real services: the one place a request's credentials are read, for upstream rows and
// the gateway's own (src/routing/own-rows.ts) alike. Each case names the caller it sets or the refusal it answers.
import { Context, Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { errorResponse } from "../../src/errors.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { Logger, Redactor } from "../../src/log.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { OWN_ROWS } from "../../src/routing/own-rows.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";
import { accessLog } from "../access-log/index.js";
import { identify } from "./index.js";

const METRICS_TOKEN = "m".repeat(32);
const open: Gateway[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close(0);
});

const row = (name: string): RouteRow => [...OWN_ROWS, ...ROUTES].find((r) => r.name === name)!;

async function setup() {
  const keys = { search: generateTenantKey(), admin: generateTenantKey(), watch: generateTenantKey() };
  const config = parseConfig({
    server: { logLevel: "error" },
    tenants: [
      { id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(keys.search) }] },
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.admin) }] },
      { id: "watch", scopes: ["operator-readonly"], keys: [{ hash: await hashTenantKey(keys.watch) }] },
    ],
  });
  const g = createGateway(config, { secrets: { tokenSecret: "t".repeat(64), metricsToken: METRICS_TOKEN }, logSink: () => {} });
  open.push(g);
  const a = new Hono();
  a.onError((err) => errorResponse(err));
  a.use(accessLog(new Logger(() => {}, "silent", new Redactor())));
  /** Mounts `name`'s identify step on its method(s) and path, answering with the caller it set. */
  const mount = (name: string, path = row(name).path) => {
    const r = row(name);
    for (const m of typeof r.method === "string" ? [r.method] : r.method)
      a.on(m, path, identify(g.services, r), (c) => {
        const caller = c.get("caller");
        return c.json({ via: caller.via, tenant: "tenant" in caller ? caller.tenant?.id : undefined });
      });
  };
  const call = async (method: string, path: string, headers: Record<string, string> = {}) => {
    const res = await a.request(path, { method, headers });
    return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
  };
  return { g, keys, mount, call };
}

describe("identify", () => {
  it("resolves a tenant key from x-api-key or Bearer, 401 for a missing or unknown key, 403 missing_scope", async () => {
    const { keys, mount, call } = await setup();
    mount("web.search");
    mount("session.list");
    expect((await call("POST", "/api/web/search", { "x-api-key": keys.search })).json).toEqual({ via: "key", tenant: "acme" });
    expect((await call("POST", "/api/web/search", { authorization: `Bearer ${keys.search}` })).json).toEqual({
      via: "key",
      tenant: "acme",
    });
    expect((await call("POST", "/api/web/search")).status).toBe(401);
    expect((await call("POST", "/api/web/search", { "x-api-key": "tg_nobody" })).status).toBe(401);
    const scoped = await call("GET", "/api/sessions", { "x-api-key": keys.search });
    expect(scoped.status).toBe(403);
    expect(scoped.json).toMatchObject({ code: "missing_scope", requiredScope: "sessions" });
  });

  it("names the caller of a public row when its credential is valid, and refuses nobody", async () => {
    const { g, keys, mount, call } = await setup();
    mount("own.health");
    expect((await call("GET", "/_tollgate/health")).json).toEqual({ via: "public" });
    expect((await call("GET", "/_tollgate/health", { "x-api-key": "tg_nobody" })).json).toEqual({ via: "public" });
    expect((await call("GET", "/_tollgate/health", { "x-api-key": keys.search })).json).toEqual({ via: "key", tenant: "acme" });
    const { token } = await g.services.tokens.mint({ tenant: "acme", kind: "search", scopes: ["search"], ttlSeconds: 60 });
    expect((await call("GET", `/_tollgate/health?token=${token}`)).json).toEqual({ via: "token", tenant: "acme" });
  });

  it("refuses a gateway token where a tenant key mints tokens (403 tenant_key_required), before verifying it", async () => {
    const { g, keys, mount, call } = await setup();
    mount("own.tokens.mint");
    const { token } = await g.services.tokens.mint({ tenant: "acme", kind: "search", scopes: ["search"], ttlSeconds: 60 });
    for (const t of [token, "eyJhbGciOiJIUzI1NiJ9.e30.bad"]) {
      const r = await call("POST", "/_tollgate/tokens", { authorization: `Bearer ${t}` });
      expect(r.status).toBe(403);
      expect(r.json.code).toBe("tenant_key_required");
    }
    expect((await call("POST", "/_tollgate/tokens", { "x-api-key": keys.search })).json).toEqual({ via: "key", tenant: "acme" });
  });

  it("lets an operator-readonly key read the admin API and refuses its changes (403 read_only), a tenant key 403 missing_scope", async () => {
    const { keys, mount, call } = await setup();
    for (const n of ["admin.tenants.list", "admin.tenants.create", "admin.consoleLink"]) mount(n);
    expect((await call("GET", "/_tollgate/admin/tenants", { "x-api-key": keys.watch })).json).toEqual({ via: "key", tenant: "watch" });
    const change = await call("POST", "/_tollgate/admin/tenants", { "x-api-key": keys.watch });
    expect(change.status).toBe(403);
    expect(change.json.code).toBe("read_only");
    expect((await call("POST", "/_tollgate/admin/console-links", { "x-api-key": keys.watch })).status).toBe(200); // its own link
    expect((await call("POST", "/_tollgate/admin/tenants", { "x-api-key": keys.admin })).json).toEqual({ via: "key", tenant: "ops" });
    const tenant = await call("GET", "/_tollgate/admin/tenants", { "x-api-key": keys.search });
    expect(tenant.status).toBe(403);
    expect(tenant.json).toMatchObject({ code: "missing_scope", requiredScope: "admin" });
  });

  it("takes the metrics bearer on the metrics row, else an operator key", async () => {
    const { keys, mount, call } = await setup();
    mount("own.metrics");
    expect((await call("GET", "/_tollgate/metrics", { authorization: `Bearer ${METRICS_TOKEN}` })).json).toEqual({ via: "metrics-token" });
    expect((await call("GET", "/_tollgate/metrics", { authorization: `Bearer ${"x".repeat(32)}` })).status).toBe(401);
    expect((await call("GET", "/_tollgate/metrics", { "x-api-key": keys.watch })).json).toEqual({ via: "key", tenant: "watch" });
    expect((await call("GET", "/_tollgate/metrics", { "x-api-key": keys.search })).status).toBe(403);
  });

  it("answers a 401 on /mcp with the protected resource metadata challenge", async () => {
    const { mount, call } = await setup();
    mount("mcp");
    const r = await call("POST", "http://gw.test/mcp");
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe(
      'Bearer resource_metadata="http://gw.test/.well-known/oauth-protected-resource/mcp", scope="search jobs agents sessions sandboxes"',
    );
  });

  it("admits a key or token checked lately with no promise of its own, and waits (and refuses) exactly as before otherwise", async () => {
    const { g, keys } = await setup();
    const step = identify(g.services, row("web.search"));
    const NEXT = Promise.resolve(); // what the rest of the chain hands back
    const run = (headers: Record<string, string>) => {
      const c = new Context(new Request("http://gw.test/api/web/search", { method: "POST", headers }));
      c.set("logFields", {} as never);
      let ran = false;
      let out: unknown;
      try {
        out = step(c as never, () => {
          ran = true;
          return NEXT;
        });
      } catch (err) {
        out = Promise.reject(err); // thrown at once: Hono's chain answers it as it would a rejection
      }
      return { c, out, ran: () => ran };
    };
    // A key not hashed yet: the directory checks it (a promise); then the same key answers at once.
    const first = run({ "x-api-key": keys.search });
    expect(first.out).not.toBe(NEXT);
    await first.out;
    expect(first.ran()).toBe(true);
    const again = run({ "x-api-key": keys.search });
    expect(again.out).toBe(NEXT); // next()'s own promise, handed back as it is: no promise or turn of identify's
    expect(again.c.get("caller")).toMatchObject({ via: "key", tenant: { id: "acme" } });
    expect(again.c.get("logFields")).toMatchObject({ route: "web.search", tenant: "acme" });
    // Refusals: an unknown key waits for the directory, then rejects; a missing scope is thrown at once once known.
    const unknown = run({ "x-api-key": "tg_nobody_at_all_here" });
    await expect(unknown.out).rejects.toMatchObject({ status: 401 });
    expect(unknown.ran()).toBe(false);
    // A token: verified (a promise) the first time, at once after; a revoked one is refused and nothing runs.
    const { token, jti } = await g.services.tokens.mint({ kind: "search", tenant: "acme", scopes: ["search"], ttlSeconds: 60 });
    const t1 = run({ authorization: `Bearer ${token}` });
    expect(t1.out).not.toBe(NEXT);
    await t1.out;
    expect(t1.c.get("caller")).toMatchObject({ via: "token", tenant: { id: "acme" } });
    expect(run({ authorization: `Bearer ${token}` }).out).toBe(NEXT);
    await g.services.tokens.revoke(jti, Math.floor(Date.now() / 1000) + 60);
    const t3 = run({ authorization: `Bearer ${token}` });
    await expect(t3.out).rejects.toMatchObject({ status: 401, code: "token_revoked" });
    expect(t3.ran()).toBe(false);
  });
});
