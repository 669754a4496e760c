// The chain's decisions come from the row, not from its path or handler name: rows mounted by the chain itself
// (middleware/chain.ts mountRouteTable) on the gateway's real services, each field set and unset on rows whose paths
// would have said the opposite. Rate limit: `rateLimited`; meter: `meter.settles`; quota: `quota.until`; and the one
// claim of a created resource (src/routing/created.ts claimCreated).
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse } from "../../src/errors.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { mountRouteTable } from "../../middleware/chain.js";
import { requestId } from "../../middleware/request-id/index.js";
import { accessLog } from "../../middleware/access-log/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { Logger, Redactor } from "../../src/log.js";
import { BODY } from "../../src/routing/bodies/index.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";
import type { Handlers } from "../../src/routing/handlers.js";
import { meterCredits } from "../../middleware/meter/index.js";
import { stateKeys } from "../../src/state/keys.js";

const open: Gateway[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close(0);
});

/** A row any tenant key may call, free, no body, answered by the stand-in handler below. */
const probe = (name: string, path: string, more: Partial<RouteRow> = {}): RouteRow => ({
  name,
  metric: "other",
  method: "POST",
  path,
  auth: ["tenant-key"],
  scope: undefined,
  pay: "free",
  body: BODY.none,
  handler: "own.health",
  ...more,
});

/** The rows mounted by the chain on a bare app, with one tenant key each for `acme` and `globex`. */
async function mount(rows: RouteRow[], quotas: Record<string, unknown> = {}) {
  const keys = { acme: generateTenantKey(), globex: generateTenantKey() };
  const config = parseConfig({
    server: { logLevel: "error" },
    tenants: [
      { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }], quotas },
      { id: "globex", keys: [{ hash: await hashTenantKey(keys.globex) }], quotas },
    ],
  });
  const g = createGateway(config, { secrets: {}, logSink: () => {} });
  open.push(g);
  let made = 0;
  // The stand-in handler answers a creation's shape and claims nothing (the chain's quota step must see to it).
  const handlers: Handlers = {
    "own.health": (c) => c.json({ id: `s_${++made}`, expiresAt: new Date(Date.now() + 600_000).toISOString() }),
  };
  const app = new Hono<GatewayEnv>();
  app.onError((err, c) => errorResponse(err, c.get("requestId")));
  app.use(requestId());
  app.use(accessLog(new Logger(() => {}, "silent", new Redactor())));
  mountRouteTable(app, g.services, handlers, rows);
  const call = async (path: string, key: string) => {
    const r = await app.request(path, { method: "POST", headers: { "x-api-key": key } });
    return { status: r.status, json: (await r.json()) as Record<string, unknown> };
  };
  return { g, keys, call };
}

describe("row field rateLimited: the tenant's rate limit applies unless the row says false", () => {
  it("limits a row under /sandbox/ that leaves it unset, and not a row under /api/ that sets it false", async () => {
    const rows = [probe("t.sandboxPath", "/sandbox/:id/probe"), probe("t.apiPath", "/api/probe", { rateLimited: false })];
    const { keys, call } = await mount(rows, { requestsPerMinute: 1 });
    expect((await call("/sandbox/sb_1/probe", keys.acme)).status).toBe(200);
    const limited = await call("/sandbox/sb_1/probe", keys.acme);
    expect(limited.status).toBe(429);
    expect(limited.json.code).toBe("rate_limited");
    for (let i = 0; i < 3; i++) expect((await call("/api/probe", keys.globex)).status).toBe(200);
  });

  it("is set false on the runtime plane's rows only, so the table says what the path used to", () => {
    const exempt = ROUTES.filter((r) => r.rateLimited === false).map((r) => r.name);
    expect(exempt.length).toBeGreaterThan(30);
    expect(exempt.every((n) => n.startsWith("runtime."))).toBe(true);
    expect(ROUTES.filter((r) => r.path.startsWith("/sandbox/")).every((r) => r.rateLimited === false)).toBe(true);
  });
});

describe("row field meter.settles: the chain's meter bills a per-call row unless its handler settles it", () => {
  const meter = { per: "call", price: "webSearch" } as const;
  const credits = (more: Partial<RouteRow>) => ({ pay: "credits", ...more }) as const;

  it("bills a call in the chain when unset (even on a path like search's), and not when the handler settles it", async () => {
    const rows = [
      probe("t.chainBilled", "/api/web/probe", credits({ meter })),
      probe("t.handlerBilled", "/api/probe", credits({ meter: { ...meter, settles: "handler" } })),
    ];
    const { g, keys, call } = await mount(rows);
    expect((await call("/api/web/probe", keys.acme)).status).toBe(200);
    expect((await call("/api/probe", keys.globex)).status).toBe(200);
    const ledger = (tenant: string) => g.stores.ledger.list({ tenant, kind: "credits" });
    expect((await ledger("acme")).map((e) => [e.route, e.state])).toEqual([["t.chainBilled", "committed"]]);
    expect(await ledger("globex")).toEqual([]);
    expect(meterCredits(g.services, rows[1]!)).toBeUndefined();
  });

  it("is set on the cached search rows, whatever their handler is called", () => {
    const settled = ROUTES.filter((r) => r.meter?.per === "call" && r.meter.settles === "handler").map((r) => r.name);
    expect(settled.sort()).toEqual(["web.fetch", "web.search"]);
  });
});

describe("row field quota.until: how a created resource stops counting", () => {
  it('remembers the paid end time of a creation counted until "expiry" (not by its path), and claims what it counted', async () => {
    const rows = [
      probe("t.untilExpiry", "/api/probe-session", { creates: "session", quota: { kind: "session", until: "expiry" } }),
      probe("t.untilUpstream", "/x402/probe-session", { creates: "session", quota: { kind: "session" } }),
    ];
    const { g, keys, call } = await mount(rows, { maxSessions: 5 });
    const a = await call("/api/probe-session", keys.acme);
    const b = await call("/x402/probe-session", keys.acme);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await g.stores.kv.get(stateKeys.paidSession(String(a.json.id)))).toBeDefined();
    expect(await g.stores.kv.get(stateKeys.paidSession(String(b.json.id)))).toBeUndefined();
    // The handler claimed neither: the chain's one claim made both the caller's, so both count.
    expect(await g.stores.ownership.owner("session", String(a.json.id))).toBe("acme");
    expect(await g.stores.ownership.owner("session", String(b.json.id))).toBe("acme");
  });

  it('is "expiry" on the x402 session row alone', () => {
    expect(ROUTES.filter((r) => r.quota?.until === "expiry").map((r) => r.name)).toEqual(["x402.session.create"]);
  });
});
