// Per-tenant request logs against a real gateway (emulator + local chain, real payments): paid searches, a budget
// refusal, an unfronted path; searched by status, route, error code and time through the admin API and a tenant's own
// endpoint (another tenant's request id answers 404), exported as CSV and JSON; malformed searches refused naming the
// field; nothing secret in the log. Also: the write is off the request's path (a slow store delays no answer), and two
// gateways on one Redis share the log (a request on one is read on the other).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import type { EmulatorHandle } from "../../emulator/index.js";
import { createGateway } from "../../src/gateway.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { memoryStores } from "../../src/state/memory.js";
import type { RequestRecord } from "../../src/state/types.js";
import { search, startEmulatorWithChain, startPaidGateway, type PaidStack } from "../helpers/paid-stack.js";

type Row = {
  id: string;
  tenant: string;
  route: string;
  status: number;
  code?: string;
  spend?: string;
  spendUsd?: string;
  time: string;
  path: string;
  durationMs: number;
};

describe("request logs per tenant (a paid stack)", () => {
  let emu: EmulatorHandle;
  let s: Omit<PaidStack, "emulator">;
  const ids: Record<string, string[]> = { acme: [], beta: [] };
  const get = (path: string, key: string) => fetch(`${s.gateway.url}${path}`, { headers: { "x-api-key": key } });
  const rows = async (path: string, key = s.keys.ops!) => {
    const r = await get(path, key);
    expect(r.status, await r.clone().text()).toBe(200);
    return ((await r.json()) as { requests: Row[] }).requests;
  };

  beforeAll(async () => {
    emu = await startEmulatorWithChain();
    s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "0.01" } }, { id: "beta" }, { id: "ops", scopes: ["admin"] }]);
    // acme: two paid searches, then its budget refuses a third; a path the gateway does not front.
    for (const q of ["first", "second", "third"]) {
      const r = await search(s.gateway.url, s.keys.acme!, { query: `request log ${q}` });
      ids.acme!.push(r.headers.get("x-request-id")!);
      await r.arrayBuffer();
    }
    const nf = await fetch(`${s.gateway.url}/api/not-a-route`, { headers: { "x-api-key": s.keys.acme! } });
    expect(nf.status).toBe(404);
    ids.acme!.push(nf.headers.get("x-request-id")!);
    const b = await search(s.gateway.url, s.keys.beta!, { query: "request log beta" });
    expect(b.status).toBe(200);
    ids.beta!.push(b.headers.get("x-request-id")!);
    await b.arrayBuffer();
  }, 90_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("keeps each request of the tenant: route, status, latency, spend, error code and request id, newest first", async () => {
    const acme = await rows("/_tollgate/admin/requests?tenant=acme");
    expect(acme.map((r) => r.id)).toEqual([...ids.acme!].reverse());
    const [notFronted, refused, second, first] = acme;
    expect(notFronted).toMatchObject({ tenant: "acme", status: 404, code: "route_not_fronted", path: "/api/not-a-route" });
    expect(refused).toMatchObject({ route: "x402.web.search", status: 402, code: "budget_exceeded" });
    expect(refused!.spend).toBeUndefined();
    for (const paid of [first!, second!]) {
      expect(paid).toMatchObject({ route: "x402.web.search", status: 200, method: "POST" });
      expect(paid.code).toBeUndefined();
      expect(BigInt(paid.spend!)).toBeGreaterThan(0n);
      expect(Number(paid.spendUsd)).toBeGreaterThan(0);
      expect(paid.durationMs).toBeGreaterThan(0);
      expect(Date.parse(paid.time)).toBeLessThanOrEqual(Date.now());
    }
    // The spend in the log is the ledger's.
    const ledger = (await (await get("/_tollgate/admin/ledger?tenant=acme&state=committed", s.keys.ops!)).json()) as {
      entries: Array<{ amount: string }>;
    };
    const ledgerSum = ledger.entries.reduce((a, e) => a + BigInt(e.amount), 0n);
    expect(BigInt(first!.spend!) + BigInt(second!.spend!)).toBe(ledgerSum);
  });

  it("searches by status, route, error code and time", async () => {
    expect((await rows("/_tollgate/admin/requests?tenant=acme&status=4xx")).map((r) => r.status)).toEqual([404, 402]);
    expect((await rows("/_tollgate/admin/requests?tenant=acme&status=402")).map((r) => r.code)).toEqual(["budget_exceeded"]);
    expect((await rows("/_tollgate/admin/requests?tenant=acme&status=ok")).map((r) => r.status)).toEqual([200, 200]);
    expect((await rows("/_tollgate/admin/requests?tenant=acme&route=x402.web.search")).length).toBe(3);
    expect((await rows("/_tollgate/admin/requests?tenant=acme&route=x402")).length).toBe(3); // a family of rows
    expect((await rows("/_tollgate/admin/requests?tenant=acme&route=/api/")).map((r) => r.code)).toEqual(["route_not_fronted"]);
    expect((await rows("/_tollgate/admin/requests?tenant=acme&code=budget_exceeded")).map((r) => r.id)).toEqual([ids.acme![2]]);
    expect((await rows("/_tollgate/admin/requests?tenant=acme&route=x402.web.search&status=error")).length).toBe(1);
    const today = new Date().toISOString().slice(0, 10);
    expect((await rows(`/_tollgate/admin/requests?tenant=acme&from=${today}&to=${today}`)).length).toBe(4); // a bare `to`: that whole day
    expect(await rows(`/_tollgate/admin/requests?tenant=acme&from=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    expect((await rows("/_tollgate/admin/requests?tenant=acme&limit=1")).map((r) => r.id)).toEqual([ids.acme![3]]);
    // Every tenant's, newest first, without `tenant`.
    const all = await rows("/_tollgate/admin/requests?route=x402.web.search&status=200");
    expect(all.map((r) => r.tenant).sort()).toEqual(["acme", "acme", "beta"]);
    expect(all[0]!.tenant).toBe("beta");
  });

  it("gives a tenant its own requests only; another tenant's request id answers 404", async () => {
    const own = await rows("/_tollgate/requests", s.keys.beta!);
    expect(own.map((r) => r.tenant)).toEqual(["beta"]);
    expect((await rows("/_tollgate/requests?status=4xx", s.keys.acme!)).length).toBe(2);
    const mine = await get(`/_tollgate/requests/${ids.beta![0]}`, s.keys.beta!);
    expect(mine.status).toBe(200);
    expect(await mine.json()).toMatchObject({ id: ids.beta![0], tenant: "beta", status: 200 });
    const theirs = await get(`/_tollgate/requests/${ids.acme![0]}`, s.keys.beta!);
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toMatchObject({ code: "not_found" });
    // The admin API is not a tenant's.
    expect((await get("/_tollgate/admin/requests?tenant=acme", s.keys.beta!)).status).toBe(403);
  });

  it("exports CSV and JSON", async () => {
    const csv = await get("/_tollgate/admin/requests?tenant=acme&format=csv", s.keys.ops!);
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("content-disposition")).toMatch(/attachment; filename="tollgate-requests-acme-\d{4}-\d{2}-\d{2}\.csv"/);
    const lines = (await csv.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe("time,tenant,id,method,route,path,status,durationMs,upstreamMs,spendUsd,heldUsd,code,traceId,cache");
    expect(lines).toHaveLength(5);
    expect(lines[2]).toContain(",402,");
    expect(lines[2]).toContain(",budget_exceeded,");
    const own = await get("/_tollgate/requests?format=json&status=200", s.keys.beta!);
    expect(((await own.json()) as { requests: Row[] }).requests).toHaveLength(1);
  });

  it("refuses a malformed search with a 400 naming the field, and an unknown tenant with a 404", async () => {
    for (const [q, field] of [
      ["status=teapot", "status"],
      ["from=yesterday", "from"],
      ["limit=0", "limit"],
      ["limit=5000", "limit"],
      ["code=%3Cscript%3E", "code"],
      ["format=xml", "format"],
      ["from=2026-11-02&to=2026-11-01T00:00:00Z", "to"],
    ]) {
      const r = await get(`/_tollgate/admin/requests?tenant=acme&${q}`, s.keys.ops!);
      expect(r.status, q).toBe(400);
      expect(await r.json(), q).toMatchObject({ code: "invalid_params", field });
    }
    // Every malformed field is named at once, each with its problem.
    const many = await get("/_tollgate/admin/requests?tenant=acme&status=teapot&code=%3Cx%3E&limit=0", s.keys.ops!);
    expect(many.status).toBe(400);
    const body = (await many.json()) as { field: string; fields: Array<{ field: string }>; message: string };
    expect(body.fields.map((f) => f.field)).toEqual(["status", "code", "limit"]);
    expect(body.field).toBe("status");
    const r = await get("/_tollgate/admin/requests?tenant=nobody", s.keys.ops!);
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ code: "not_found" });
  });

  it("holds nothing secret: no key, wallet key, upstream key or payment signature", async () => {
    const dump = JSON.stringify(await Promise.all(["acme", "beta", "ops"].map((t) => s.gateway.gateway.stores.requests.list(t, 1000))));
    expect(dump.length).toBeGreaterThan(100);
    const secrets = [...Object.values(s.keys), s.secrets.upstreamApiKey, s.secrets.walletKey!, s.secrets.tokenSecret!, s.wallet.privateKey];
    for (const secret of secrets) expect(dump.includes(secret!), `request log holds ${secret!.slice(0, 6)}…`).toBe(false);
    expect(dump).not.toMatch(/payment-signature|eyJ[A-Za-z0-9_-]{20}/i);
    // Only the documented fields.
    const fields = new Set((JSON.parse(dump) as RequestRecord[][]).flat().flatMap((r) => Object.keys(r)));
    const allowed = [
      "id",
      "at",
      "tenant",
      "method",
      "route",
      "path",
      "status",
      "durationMs",
      "upstreamMs",
      "spend",
      "code",
      "traceId",
      "cache",
    ];
    for (const f of fields) expect(allowed).toContain(f);
  });
});

describe("the request log's write", () => {
  it("is off the request's path: a store that takes 1.5 s to append delays no answer, and the record lands after", async () => {
    const key = generateTenantKey();
    const stores = memoryStores();
    const append = stores.requests.append.bind(stores.requests);
    let appended = 0;
    stores.requests.append = async (records, keep) => {
      await new Promise((r) => setTimeout(r, 1500));
      appended += records.length;
      return append(records, keep);
    };
    const config = parseConfig({
      server: { logLevel: "error" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }] }],
    });
    const gw = createGateway(config, { secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) }, stores });
    try {
      const t0 = performance.now();
      const r = await gw.app.request("/_tollgate/whoami", { headers: { "x-api-key": key } });
      expect(r.status).toBe(200);
      expect(performance.now() - t0).toBeLessThan(500);
      expect(appended).toBe(0);
    } finally {
      await gw.close(3000); // waits for the background write
    }
    expect(appended).toBe(1);
    expect((await stores.requests.list("acme", 10))[0]).toMatchObject({ route: "own.whoami", status: 200, tenant: "acme" });
  });

  it("records nothing with requestLog.keep = 0", async () => {
    const key = generateTenantKey();
    const stores = memoryStores();
    const config = parseConfig({
      server: { logLevel: "error" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      requestLog: { keep: 0 },
      tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }] }],
    });
    const gw = createGateway(config, { secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) }, stores });
    await gw.app.request("/_tollgate/whoami", { headers: { "x-api-key": key } });
    await gw.close();
    expect(await stores.requests.list("acme", 10)).toEqual([]);
  });
});

describe("the request log across a fleet (two gateways on one Redis)", () => {
  it("shows a request made on one instance to an operator reading another, within a second", async () => {
    const { startRedisServer } = await import("../state/redis-server.js");
    const { redisStores } = await import("../../src/state/redis.js");
    const redis = await startRedisServer();
    const key = generateTenantKey();
    const ops = generateTenantKey();
    const config = parseConfig({
      server: { logLevel: "error" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [
        { id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }] },
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] },
      ],
    });
    const prefix = `reqlog-${Date.now()}:`;
    const make = () =>
      createGateway(config, { secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) }, stores: redisStores(redis.url, { prefix }) });
    const [a, b] = [make(), make()];
    try {
      await seenAcross(a, b, key, ops);
    } finally {
      await a.close();
      await b.close();
      await redis.stop();
    }
  }, 30_000);
});

/** A request on `a`, read by an operator on `b`: how long until it shows. */
async function seenAcross(a: ReturnType<typeof createGateway>, b: ReturnType<typeof createGateway>, key: string, ops: string) {
  const w = await a.app.request("/_tollgate/whoami", { headers: { "x-api-key": key, "x-request-id": "fleet-2" } });
  expect(w.status).toBe(200);
  const t0 = Date.now();
  let seen: Array<{ id: string; tenant: string; route: string }> = [];
  while (Date.now() - t0 < 3000) {
    const res = await b.app.request("/_tollgate/admin/requests?tenant=acme&id=fleet-2", { headers: { "x-api-key": ops } });
    seen = ((await res.json()) as { requests: typeof seen }).requests;
    if (seen.length) break;
    await new Promise((res) => setTimeout(res, 25));
  }
  const ms = Date.now() - t0;
  console.log(`[request log] seen on the other instance after ${ms} ms`);
  expect(seen).toEqual([expect.objectContaining({ id: "fleet-2", tenant: "acme", route: "own.whoami" })]);
  expect(ms).toBeLessThan(1000);
}

describe("paths with credentials in them", () => {
  // A client that puts a credential in a path (a key pasted into a URL, a JWT or refresh token as a path segment) finds
  // it redacted in the request log as in the access log: in the stored record, the tenant's and the admin's views, the
  // console's page and its CSV/JSON exports. A record kept unredacted (written before this rule) is redacted when shown.
  const acmeKey = generateTenantKey();
  const opsKey = generateTenantKey();
  const otherKey = generateTenantKey();
  const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0ZW5hbnQ6YWNtZSIsImV4cCI6NDEwMjQ0NDgwMH0.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWc";
  const refresh = `tgr_${"R".repeat(43)}`;
  const secrets = [acmeKey, opsKey, otherKey, jwt, refresh];
  let gw: Awaited<ReturnType<typeof startTestGatewayFor>>;
  const startTestGatewayFor = async () =>
    (await import("../helpers/gateway.js")).startTestGateway(
      {
        server: { logLevel: "info" },
        upstream: { baseUrl: "http://127.0.0.1:9" },
        tenants: [
          { id: "acme", scopes: ["search", "sessions"], keys: [{ hash: await hashTenantKey(acmeKey) }] },
          { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(opsKey) }] },
        ],
      },
      { upstreamApiKey: "upstream-key-0123456789", tokenSecret: "s".repeat(40) },
    );
  // The session read identifies the key first: an unfronted path is counted to the tenant whose key was checked lately.
  const paths = [`/api/session/${jwt}`, `/api/not-a-route/${otherKey}`, `/api/x/${refresh}/y`, `/x402/${acmeKey}`];

  beforeAll(async () => {
    gw = await startTestGatewayFor();
    for (const p of paths) {
      const r = await fetch(`${gw.url}${p}`, { headers: { "x-api-key": acmeKey } });
      await r.arrayBuffer();
      expect(r.status, p).toBeGreaterThanOrEqual(400);
    }
    // A record stored before paths were redacted on write: shown redacted all the same.
    await gw.gateway.stores.requests.append(
      [
        {
          id: "old-1",
          at: Date.now() - 1000,
          tenant: "acme",
          method: "GET",
          route: "route_not_fronted",
          path: `/api/${jwt}/${refresh}`,
          status: 404,
          durationMs: 1,
        },
      ],
      1000,
    );
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
  });

  const leaks = (text: string) => secrets.filter((x) => text.includes(x)).map((x) => `${x.slice(0, 6)}…`);

  it("stores the path redacted, as the access log writes it", async () => {
    await gw.gateway.services.requests?.flush();
    const stored = (await gw.gateway.stores.requests.list("acme", 1000)).filter((r) => r.id !== "old-1");
    expect(stored).toHaveLength(paths.length);
    expect(leaks(JSON.stringify(stored))).toEqual([]);
    expect(stored.map((r) => r.path).sort()).toEqual(
      ["/api/not-a-route/[REDACTED_KEY]", "/api/session/[REDACTED_JWT]", "/api/x/[REDACTED_KEY]/y", "/x402/[REDACTED_KEY]"].sort(),
    );
    const line = gw.logs.filter((l) => l.includes('"msg":"request"') && l.includes("/api/session/"));
    expect(line.length).toBeGreaterThan(0);
    expect(line[0]).toContain("/api/session/[REDACTED_JWT]");
  });

  it("shows no credential in the tenant's, the admin's or the console's views, nor in CSV or JSON exports", async () => {
    const texts: Record<string, string> = {};
    const read = async (name: string, url: string, headers: Record<string, string>) => {
      const r = await fetch(`${gw.url}${url}`, { headers });
      expect(r.status, name).toBe(200);
      texts[name] = await r.text();
    };
    await read("tenant json", "/_tollgate/requests", { "x-api-key": acmeKey });
    await read("tenant csv", "/_tollgate/requests?format=csv", { "x-api-key": acmeKey });
    await read("tenant one", "/_tollgate/requests/old-1", { "x-api-key": acmeKey });
    await read("admin json", "/_tollgate/admin/requests?tenant=acme", { "x-api-key": opsKey });
    await read("admin csv", "/_tollgate/admin/requests?tenant=acme&format=csv", { "x-api-key": opsKey });
    const login = await fetch(`${gw.url}/_tollgate/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: opsKey }),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    await read("console page", "/_tollgate/console/requests?tenant=acme", { cookie });
    await read("console csv", "/_tollgate/console/requests?tenant=acme&format=csv", { cookie });
    await read("console json", "/_tollgate/console/requests?tenant=acme&format=json", { cookie });
    for (const [name, text] of Object.entries(texts)) {
      expect(leaks(text), name).toEqual([]);
      expect(text, name).toContain("[REDACTED_JWT]");
    }
    expect(JSON.parse(texts["tenant one"]!).path).toBe("/api/[REDACTED_JWT]/[REDACTED_KEY]");
  });
});
