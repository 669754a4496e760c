// requireOwner on real in-memory state (src/state/memory.ts), mounted as the route table mounts it; the caller is set
// the way the identify step sets it, so this reads as the owner step alone.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse } from "../../src/errors.js";
import { TenantDirectory } from "../../src/identity/tenants.js";
import type { GatewayToken } from "../../src/identity/tokens.js";
import { memoryStores } from "../../src/state/memory.js";
import type { StateStores } from "../../src/state/types.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";
import "../../src/identity/caller.js";
import { requireOwner } from "./index.js";

const config = parseConfig({
  tenants: [
    { id: "acme", keys: [{ hash: `sha256:${"a".repeat(64)}` }] },
    { id: "globex", keys: [{ hash: `sha256:${"b".repeat(64)}` }] },
  ],
});
const directory = new TenantDirectory(config.tenants, Date.now);
const acme = directory.get("acme")!;

const row = (name: string): RouteRow => ROUTES.find((r) => r.name === name)!;

type CallerVia = "key" | "ticket" | { token: Partial<GatewayToken> };

/** The stores, with the number of ownership look-ups made through them. */
function countedStores(): { stores: StateStores; lookups: () => number } {
  const stores = memoryStores(Date.now);
  let lookups = 0;
  const owner = stores.ownership.owner.bind(stores.ownership);
  stores.ownership.owner = (kind, id) => {
    lookups++;
    return owner(kind, id);
  };
  return { stores, lookups: () => lookups };
}

/** An app with one row mounted behind requireOwner; the handler answers the volume key it was handed, if any. */
function mount(stores: StateStores, r: RouteRow, via: CallerVia = "key") {
  const app = new Hono<GatewayEnv>();
  app.onError((err) => errorResponse(err));
  const owner = requireOwner({ stores }, r);
  if (!owner) throw new Error(`${r.name} names no resource`);
  app.on(
    r.method as string | string[],
    [r.path],
    (c, next) => {
      if (via === "ticket") c.set("caller", { via: "ticket" });
      else if (via === "key") c.set("caller", { via: "key", tenant: acme, presented: "tg_test_key" });
      else {
        const token = { tenant: "acme", kind: "sandbox", scopes: [], jti: "j", exp: 0, iat: 0, ...via.token } as GatewayToken;
        c.set("caller", { via: "token", tenant: acme, token, presented: "tg_x" });
      }
      return next();
    },
    owner,
    (c) => c.json({ ok: true, volumeKey: c.var.volumeKey ?? null }),
  );
  return app;
}

describe("requireOwner", () => {
  it("lets the owner through", async () => {
    const { stores } = countedStores();
    await stores.ownership.claim("sandbox", "sb_mine", "acme");
    const res = await mount(stores, row("sandbox.get")).request("/api/sandbox/sb_mine");
    expect(res.status).toBe(200);
  });

  it("answers another tenant's id exactly like a missing one: 404 not_found", async () => {
    const { stores } = countedStores();
    await stores.ownership.claim("session", "s_theirs", "globex");
    const app = mount(stores, row("session.get"));
    const theirs = await app.request("/api/session/s_theirs");
    const missing = await app.request("/api/session/s_nobody");
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toEqual({ message: "Session s_theirs not found", code: "not_found" });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ message: "Session s_nobody not found", code: "not_found" });
  });

  it("refuses a ticket caller any owned resource (404), without a look-up", async () => {
    const { stores, lookups } = countedStores();
    await stores.ownership.claim("sandbox", "sb_mine", "acme");
    const res = await mount(stores, row("sandbox.get"), "ticket").request("/api/sandbox/sb_mine");
    expect(res.status).toBe(404);
    expect(lookups()).toBe(0);
  });

  it("trusts a sandbox token bound to the sandbox on the runtime plane without a look-up", async () => {
    const { stores, lookups } = countedStores();
    const runtime = ROUTES.find((r) => r.path.startsWith("/sandbox/:id") && r.auth.length === 1 && r.auth[0] === "sandbox-token")!;
    const path = runtime.path
      .replace(":id", "sb_bound")
      .replace(/\/:[^/]+/g, "/x")
      .replace(/\/\*$/, "/x");
    const res = await mount(stores, runtime, { token: { resource: "sb_bound" } }).request(path, {
      method: String([runtime.method].flat()[0]),
    });
    expect(res.status).toBe(200);
    expect(lookups()).toBe(0);
  });

  it("looks up a token bound to another sandbox, and refuses it (404) when the sandbox is not the tenant's", async () => {
    const { stores, lookups } = countedStores();
    await stores.ownership.claim("sandbox", "sb_other", "globex");
    const runtime = ROUTES.find((r) => r.path.startsWith("/sandbox/:id") && r.auth.length === 1 && r.auth[0] === "sandbox-token")!;
    const path = runtime.path
      .replace(":id", "sb_other")
      .replace(/\/:[^/]+/g, "/x")
      .replace(/\/\*$/, "/x");
    const res = await mount(stores, runtime, { token: { resource: "sb_mine" } }).request(path, {
      method: String([runtime.method].flat()[0]),
    });
    expect(res.status).toBe(404);
    expect(lookups()).toBe(1);
  });

  it("does not trust a bound token on a row that also takes keys: the registry decides", async () => {
    const { stores, lookups } = countedStores();
    const res = await mount(stores, row("sandbox.get"), { token: { resource: "sb_unclaimed" } }).request("/api/sandbox/sb_unclaimed");
    expect(res.status).toBe(404);
    expect(lookups()).toBe(1);
  });

  it("finds a volume named by the tenant's own name (scoped upstream) and hands its key to the handler", async () => {
    const { stores } = countedStores();
    await stores.ownership.claim("volume", "acme.data", "acme");
    await stores.ownership.claim("volume", "globex.data", "globex");
    const app = mount(stores, row("volume.delete"));
    const mine = await app.request("/api/volume/data", { method: "DELETE" });
    expect(mine.status).toBe(200);
    expect(await mine.json()).toEqual({ ok: true, volumeKey: "acme.data" });
    const theirs = await app.request("/api/volume/globex.data", { method: "DELETE" });
    expect(theirs.status).toBe(404);
    expect((await theirs.json()).code).toBe("not_found");
  });

  it("adds no step to a row that names no resource", () => {
    expect(requireOwner({ stores: memoryStores(Date.now) }, row("sandbox.create"))).toBeUndefined();
  });
});
