// checkBody on real in-memory state (src/state/memory.ts): a row's JSON body against its declaration, before anything
// is forwarded. The caller is set the way the identify step sets it.
import { Hono } from "hono";
import { describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../config/load.js";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse } from "../../src/errors.js";
import { Logger, Redactor } from "../../src/log.js";
import { TenantDirectory } from "../../src/identity/tenants.js";
import { memoryStores } from "../../src/state/memory.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";
import "../../src/identity/caller.js";
import { checkBody } from "./index.js";

const row = (name: string): RouteRow => ROUTES.find((r) => r.name === name)!;

function setup(unknownBodyFields: "refuse" | "forward" = "refuse") {
  const config = parseConfig({
    server: { unknownBodyFields },
    tenants: [
      { id: "acme", keys: [{ hash: `sha256:${"a".repeat(64)}` }] },
      { id: "globex", keys: [{ hash: `sha256:${"b".repeat(64)}` }] },
    ],
  });
  const acme = new TenantDirectory(config.tenants, Date.now).get("acme")!;
  const stores = memoryStores(Date.now);
  const lines: string[] = [];
  const logger = new Logger((l) => lines.push(l), "info", new Redactor());
  const forwarded: unknown[] = [];
  const app = new Hono<GatewayEnv>();
  app.onError((err) => errorResponse(err));
  for (const r of [row("session.create"), row("session.get")]) {
    const step = checkBody({ config, logger, stores }, r);
    if (!step) throw new Error(`${r.name}: no body step`);
    app.on(
      r.method as string,
      [r.path],
      (c, next) => {
        c.set("caller", { via: "key", tenant: acme, presented: "tg_test_key" });
        c.set("requestId", "req-1");
        return next();
      },
      step,
      (c) => {
        forwarded.push(c.var.forwardNoBody ? "no body" : c.var.jsonBody?.json);
        return c.json({ ok: true });
      },
    );
  }
  const create = (body: unknown) =>
    app.request("/api/session", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { app, stores, create, forwarded, lines };
}

describe("checkBody", () => {
  it("passes a declared body on, read once into the chain's copy", async () => {
    const { create, forwarded } = setup();
    const res = await create({ timeoutMinutes: 10, solveCaptchas: true });
    expect(res.status).toBe(200);
    expect(forwarded).toEqual([{ timeoutMinutes: 10, solveCaptchas: true }]);
  });

  it("refuses a field the row does not declare (400 unknown_field, naming every one), forwarding nothing", async () => {
    const { create, forwarded } = setup();
    const res = await create({ timeoutMinutes: 10, upstreamOnly: 1, screen: { width: 800, height: 600, depth: 3 } });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.code).toBe("unknown_field");
    expect([...body.fields].sort()).toEqual(["screen.depth", "upstreamOnly"]);
    expect(body.field).toBe(body.fields[0]);
    expect(body.message).toContain("nothing was forwarded");
    expect(forwarded).toEqual([]);
  });

  it('forwards unknown fields when the operator says so (server.unknownBodyFields = "forward"), and logs their names', async () => {
    const { create, forwarded, lines } = setup("forward");
    const res = await create({ upstreamOnly: 1 });
    expect(res.status).toBe(200);
    expect(forwarded).toEqual([{ upstreamOnly: 1 }]);
    const logged = lines.map((l) => JSON.parse(l)).find((l) => String(l.msg).startsWith("unknown body fields forwarded"));
    expect(logged).toMatchObject({ route: "session.create", fields: ["upstreamOnly"], requestId: "req-1" });
  });

  it("refuses a value out of its declared range (400 invalid_params, naming the field)", async () => {
    const { create } = setup();
    const res = await create({ liveViewTtlSeconds: 0 });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_params", field: "liveViewTtlSeconds" });
  });

  it("answers an id of another tenant's named in the body exactly like a missing one (404 not_found, with its path)", async () => {
    const { create, stores, forwarded } = setup();
    await stores.ownership.claim("profile", "p_theirs", "globex");
    await stores.ownership.claim("extension", "e_mine", "acme");
    const theirs = await create({ profile: { id: "p_theirs" } });
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toEqual({ message: "Profile p_theirs not found", code: "not_found", field: "profile.id" });
    const missing = await create({ extensionIds: ["e_mine", "e_nobody"] });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ message: "Extension e_nobody not found", code: "not_found", field: "extensionIds.1" });
    expect(forwarded).toEqual([]);
  });

  it("checks a body sent again as the first time: its ids against the registry on every request, its faults always", async () => {
    const { create, stores, forwarded } = setup();
    const body = { profile: { id: "p_later" }, timeoutMinutes: 5 };
    const before = await create(body);
    expect(before.status).toBe(404);
    expect(await before.json()).toMatchObject({ code: "not_found", field: "profile.id" });
    // The profile is the caller's now: the same text passes; another tenant's id in an equal-shaped body does not.
    await stores.ownership.claim("profile", "p_later", "acme");
    expect((await create(body)).status).toBe(200);
    expect((await create(body)).status).toBe(200);
    await stores.ownership.claim("profile", "p_theirs", "globex");
    expect((await create({ profile: { id: "p_theirs" }, timeoutMinutes: 5 })).status).toBe(404);
    for (let i = 0; i < 2; i++) {
      const res = await create({ timeoutMinutes: 5, upstreamOnly: 1 });
      expect(await res.json()).toMatchObject({ code: "unknown_field", field: "upstreamOnly" });
    }
    expect(forwarded).toEqual([body, body]);
  });

  it("neither parses nor walks again a text that passed, unless a later step reads the object", async () => {
    const config = parseConfig({ tenants: [{ id: "acme", keys: [{ hash: `sha256:${"a".repeat(64)}` }] }] });
    const acme = new TenantDirectory(config.tenants, Date.now).get("acme")!;
    const step = checkBody(
      { config, logger: new Logger(() => {}, "silent", new Redactor()), stores: memoryStores(Date.now) },
      row("session.create"),
    )!;
    const app = new Hono<GatewayEnv>();
    app.onError((err) => errorResponse(err));
    app.post(
      "/api/session",
      (c, next) => {
        c.set("caller", { via: "key", tenant: acme, presented: "tg_test_key" });
        return next();
      },
      step,
      (c) => c.json({ text: c.var.jsonBody?.text }),
    );
    const text = JSON.stringify({ timeoutMinutes: 7, solveCaptchas: true });
    const send = () => app.request("/api/session", { method: "POST", headers: { "content-type": "application/json" }, body: text });
    expect(await (await send()).json()).toEqual({ text });
    const parse = vi.spyOn(JSON, "parse");
    try {
      const again = await send();
      expect(again.status).toBe(200);
      // The answer's own JSON.parse below is the test's; the gateway parsed nothing for the request.
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it("lets the caller's own ids through", async () => {
    const { create, stores } = setup();
    await stores.ownership.claim("profile", "p_mine", "acme");
    await stores.ownership.claim("extension", "e_mine", "acme");
    expect((await create({ profile: { id: "p_mine" }, extensionIds: ["e_mine", "e_mine"] })).status).toBe(200);
  });

  it("forwards no body on a row that declares none, whatever the client sent", async () => {
    const { app, forwarded } = setup();
    const res = await app.request("/api/session/s_1", { method: "GET" });
    expect(res.status).toBe(200);
    expect(forwarded).toEqual(["no body"]);
  });

  it("adds no step to a row whose body streams through (runtime plane, uploads)", () => {
    const { stores } = setup();
    const config = parseConfig({});
    const runtime = ROUTES.find((r) => r.body.kind === "bytes")!;
    expect(checkBody({ config, logger: new Logger(() => {}, "silent", new Redactor()), stores }, runtime)).toBeUndefined();
  });
});
