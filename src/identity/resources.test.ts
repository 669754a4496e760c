import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/tenant-schema.js";
import type { GatewayEnv } from "../context.js";
import { errorResponse, GatewayError } from "../errors.js";
import { memoryStores } from "../state/memory.js";
import { liveViewer, PORT_COOKIE, portVisitor } from "./resources.js";
import { keyIdOf, TenantDirectory } from "./tenants.js";
import { TokenService } from "./tokens.js";

const notFound = () => new GatewayError(404, "not_found", "not found");

async function setup() {
  const stores = memoryStores(Date.now);
  const tokens = new TokenService("s".repeat(64), stores.kv);
  const directory = new TenantDirectory([
    tenantSchema.parse({ id: "acme", scopes: ["sandboxes", "sessions"], keys: [{ hash: `sha256:${"a".repeat(64)}` }] }),
  ]);
  const services = { tokens, directory, stores, now: Date.now };
  const app = new Hono<GatewayEnv>();
  app.onError((err) => errorResponse(err));
  app.get("/port", async (c) => c.json(await portVisitor(services, c, "sbx_1", "acme", notFound)));
  app.get("/live", async (c) => {
    const { ticket, tenantId } = await liveViewer(services, c, "ses_1", notFound);
    return c.json({ ticket, tenantId });
  });
  const mint = async (kind: "sandbox" | "session", resource: string, scopes: string[], parentKey?: string) =>
    (await tokens.mint({ tenant: "acme", kind, resource, scopes: scopes as never, ttlSeconds: 60, ...(parentKey ? { parentKey } : {}) }))
      .token;
  return { app, mint, stores };
}

describe("portVisitor", () => {
  it("admits a ports token as the bearer or in the port cookie, and says whose Authorization it was", async () => {
    const { app, mint } = await setup();
    const token = await mint("sandbox", "sbx_1", ["ports"]);
    expect(await (await app.request("/port", { headers: { authorization: `Bearer ${token}` } })).json()).toEqual({
      admitted: true,
      bearerIsOurs: true,
    });
    expect(await (await app.request("/port", { headers: { cookie: `${PORT_COOKIE}=${token}` } })).json()).toEqual({
      admitted: true,
      bearerIsOurs: false,
    });
    expect(await (await app.request("/port", { headers: { authorization: "Bearer the-apps-own" } })).json()).toEqual({
      admitted: false,
      bearerIsOurs: false,
    });
  });

  it("refuses a gateway bearer for another sandbox (404) or without the ports scope (403); a stale cookie admits nothing", async () => {
    const { app, mint } = await setup();
    const other = await mint("sandbox", "sbx_2", ["ports"]);
    expect((await app.request("/port", { headers: { authorization: `Bearer ${other}` } })).status).toBe(404);
    const runtimeOnly = await mint("sandbox", "sbx_1", ["runtime"]);
    const r = await app.request("/port", { headers: { authorization: `Bearer ${runtimeOnly}` } });
    expect(r.status).toBe(403);
    expect((await r.json()).code).toBe("token_scope");
    expect(await (await app.request("/port", { headers: { cookie: `${PORT_COOKIE}=${other}` } })).json()).toEqual({
      admitted: false,
      bearerIsOurs: false,
    });
  });
});

describe("liveViewer", () => {
  it("takes a live ticket of the session's owner; a bad ticket is 401 ticket_invalid, another session's 404", async () => {
    const { app, mint, stores } = await setup();
    await stores.ownership.claim("session", "ses_1", "acme");
    const ticket = await mint("session", "ses_1", ["live"]);
    expect(await (await app.request(`/live?ticket=${ticket}`)).json()).toEqual({ ticket, tenantId: "acme" });
    const bad = await app.request("/live?ticket=nope");
    expect(bad.status).toBe(401);
    expect((await bad.json()).code).toBe("ticket_invalid");
    const elsewhere = await mint("session", "ses_2", ["live"]);
    expect((await app.request(`/live?ticket=${elsewhere}`)).status).toBe(404);
    const noLive = await mint("session", "ses_1", ["cdp"]);
    expect((await app.request(`/live?ticket=${noLive}`)).status).toBe(404);
  });

  it("refuses a ticket of a session that ended (410 session_ended): the ticket dies with its session", async () => {
    const { app, mint, stores } = await setup();
    await stores.ownership.claim("session", "ses_1", "acme");
    const ticket = await mint("session", "ses_1", ["live"]);
    expect((await app.request(`/live?ticket=${ticket}`)).status).toBe(200);
    await stores.ownership.setActive("session", "ses_1", false);
    expect(await stores.ownership.owner("session", "ses_1")).toBe("acme"); // its owner is still remembered
    const r = await app.request(`/live?ticket=${ticket}`);
    expect(r.status).toBe(410);
    const body = await r.json();
    expect(body.code).toBe("session_ended");
    expect(body.message).toMatch(/ended.*new live view link/);
    // Another tenant's ticket for the ended session still learns nothing but 404.
    const foreign = (
      await new TokenService("s".repeat(64), stores.kv).mint({
        tenant: "evil",
        kind: "session",
        resource: "ses_1",
        scopes: ["live"],
        ttlSeconds: 60,
      })
    ).token;
    expect((await app.request(`/live?ticket=${foreign}`)).status).not.toBe(410);
  });

  it("refuses a ticket whose parent key the tenant no longer holds (401 ticket_revoked); a ports token likewise", async () => {
    const { app, mint, stores } = await setup();
    await stores.ownership.claim("session", "ses_1", "acme");
    const held = await mint("session", "ses_1", ["live"], keyIdOf(`sha256:${"a".repeat(64)}`));
    expect((await app.request(`/live?ticket=${held}`)).status).toBe(200);
    const orphan = await mint("session", "ses_1", ["live"], keyIdOf(`sha256:${"b".repeat(64)}`));
    const r = await app.request(`/live?ticket=${orphan}`);
    expect(r.status).toBe(401);
    expect((await r.json()).code).toBe("ticket_revoked");
    const port = await mint("sandbox", "sbx_1", ["ports"], keyIdOf(`sha256:${"b".repeat(64)}`));
    const p = await app.request("/port", { headers: { authorization: `Bearer ${port}` } });
    expect(p.status).toBe(401);
    expect((await p.json()).code).toBe("token_revoked");
  });
});
