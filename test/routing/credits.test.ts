// Credits metered into the same budgets as x402: every route that costs money refuses an over-budget tenant before it
// reaches the upstream, concurrent credit-billed calls never overspend (one instance, or two sharing Redis), and the
// ledger's totals are the usage the tenant is shown.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";
import { startTestGateway } from "../helpers/gateway.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const keys = { poor: generateTenantKey(), ten: generateTenantKey(), ops: generateTenantKey() };

async function tenants() {
  return [
    // Less than any price: every route that costs money refuses it.
    { id: "poor", keys: [{ hash: await hashTenantKey(keys.poor) }], budget: { daily: "0.0001" } },
    // Exactly ten scrapes at the default $0.001.
    { id: "ten", keys: [{ hash: await hashTenantKey(keys.ten) }], budget: { daily: "0.010" } },
    { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
  ];
}

const post = (base: string, key: string, path: string, body: unknown = {}) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("credits on one instance (memory)", () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    upstream = await startEchoUpstream();
    gw = await startTestGateway(
      { upstream: { baseUrl: upstream.url }, cache: { enabled: false }, tenants: await tenants() },
      { upstreamApiKey: "upstream-key", tokenSecret: "t".repeat(64) },
    );
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it.each([
    ["web search", "/api/web/search", { query: "q" }],
    ["web fetch", "/api/web/fetch", { url: "https://example.com" }],
    ["web batch fetch", "/api/web/batch-fetch", { urls: ["https://example.com"] }],
    ["web crawl", "/api/web/crawl", { url: "https://example.com" }],
    ["scrape", "/api/scrape", { url: "https://example.com" }],
    ["batch scrape", "/api/scrape/batch", { urls: ["https://example.com"] }],
    ["crawl", "/api/crawl", { url: "https://example.com" }],
    ["extract", "/api/extract", { urls: ["https://example.com"] }],
    ["an agent task", "/api/task/browser-use", { task: "t" }],
    ["another agent family", "/api/task/claude-computer-use", { task: "t" }],
    ["session creation", "/api/session", {}],
    ["sandbox creation", "/api/sandbox", { imageName: "node" }],
  ])("refuses %s over budget with 402 budget_exceeded before the upstream sees it", async (_what, path, body) => {
    const before = upstream.seen.length;
    const r = await post(gw.url, keys.poor, path, body);
    expect(r.status).toBe(402);
    expect(await r.json()).toMatchObject({ code: "budget_exceeded", window: "daily", limit: "0.0001" });
    expect(upstream.seen.length).toBe(before);
  });

  it("lets an over-budget tenant read, list and stop (they cost nothing)", async () => {
    for (const [method, path] of [
      ["GET", "/api/sessions/active-count"],
      ["GET", "/api/images"],
      ["GET", "/api/profiles"],
      ["GET", "/api/volume"],
    ]) {
      const r = await fetch(`${gw.url}${path}`, { method, headers: { "x-api-key": keys.poor } });
      expect(r.status, `${method} ${path}`).toBe(200);
    }
  });

  it("forwards exactly 10 of 100 concurrent scrapes on a budget for 10, and the ledger is the usage shown", async () => {
    const before = upstream.seen.filter((s) => s.url === "/api/scrape").length;
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => post(gw.url, keys.ten, "/api/scrape", { url: `https://example.com/${i}` })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(90);
    expect(upstream.seen.filter((s) => s.url === "/api/scrape").length - before).toBe(10);

    const usage = await (await fetch(`${gw.url}/_tollgate/usage`, { headers: { "x-api-key": keys.ten } })).json();
    expect(usage.daily).toMatchObject({ limit: "0.01", spent: "0.01", remaining: "0.00", byKind: { credits: "0.01", x402: "0.00" } });
    const ledger = await (
      await fetch(`${gw.url}/_tollgate/admin/ledger?tenant=ten&limit=1000`, { headers: { "x-api-key": keys.ops } })
    ).json();
    const committed = (ledger.entries as any[]).filter((e) => e.state === "committed");
    expect(committed).toHaveLength(10);
    expect(committed.every((e) => e.kind === "credits" && e.route === "scrape.start")).toBe(true);
    expect(committed.reduce((sum, e) => sum + BigInt(e.amount), 0n)).toBe(10_000n);
  });
});

describe("credits across two instances sharing Redis", () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let redis: RedisServer;
  const procs: GatewayProcess[] = [];
  beforeAll(async () => {
    [upstream, redis] = await Promise.all([startEchoUpstream(), startRedisServer()]);
  });
  afterAll(async () => {
    for (const p of procs) await p.stop().catch(() => {});
    await upstream?.close();
    await redis?.stop();
  });

  it("forwards exactly 10 of 100 concurrent scrapes spread over both instances", async () => {
    const cfg = {
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: upstream.url },
      state: { backend: "redis", redisUrl: `${redis.url}/7` },
      tenants: await tenants(),
    };
    const env = { TOLLGATE_UPSTREAM_API_KEY: "upstream-key", TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex") };
    const [a, b] = await Promise.all([startGatewayProcess(cfg, env), startGatewayProcess(cfg, env)]);
    procs.push(a, b);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => post(i % 2 ? a.url : b.url, keys.ten, "/api/scrape", { url: `https://example.com/${i}` })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(10);
    expect(results.filter((r) => r.status === 402)).toHaveLength(90);
    expect(upstream.seen.filter((s) => s.url === "/api/scrape")).toHaveLength(10);
    for (const url of [a.url, b.url]) {
      const usage = await (await fetch(`${url}/_tollgate/usage`, { headers: { "x-api-key": keys.ten } })).json();
      expect(usage.daily).toMatchObject({ spent: "0.01", remaining: "0.00" });
    }
  }, 120_000);
});
