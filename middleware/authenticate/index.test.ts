import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/schema.js";
import { errorResponse } from "../../src/errors.js";
import { hashTenantKey, TenantDirectory } from "../identify/tenants.js";
import { accessLog } from "../access-log/index.js";
import { Logger, Redactor } from "../../src/log.js";
import { authenticate } from "./index.js";

const KEY = "tg_test_acme_0123456789abcdef";

async function app() {
  const acme = tenantSchema.parse({ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(KEY) }] });
  const a = new Hono();
  a.onError((err) => errorResponse(err));
  a.use(accessLog(new Logger(() => {}, "silent", new Redactor())));
  a.get("/search", authenticate(new TenantDirectory([acme]), "search"), (c) => c.json({ tenant: c.var.tenant?.id }));
  a.get("/sandboxes", authenticate(new TenantDirectory([acme]), "sandboxes"), (c) => c.json({ tenant: c.var.tenant?.id }));
  return a;
}

describe("authenticate", () => {
  it("resolves the tenant from x-api-key or a Bearer key and sets c.var.tenant", async () => {
    const a = await app();
    expect(await (await a.request("/search", { headers: { "x-api-key": KEY } })).json()).toEqual({ tenant: "acme" });
    expect(await (await a.request("/search", { headers: { authorization: `Bearer ${KEY}` } })).json()).toEqual({ tenant: "acme" });
  });

  it("answers 401 to a missing or unknown key, before the route runs", async () => {
    const a = await app();
    expect((await a.request("/search")).status).toBe(401);
    expect((await a.request("/search", { headers: { "x-api-key": "tg_nobody" } })).status).toBe(401);
  });

  it("answers 403 when the tenant lacks the route's scope", async () => {
    const res = await (await app()).request("/sandboxes", { headers: { "x-api-key": KEY } });
    expect(res.status).toBe(403);
  });
});
