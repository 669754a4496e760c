// A keyless token's cap is never above what its tenant's budget could pay: the least of its daily and monthly limits
// and what remains of its total budget. A larger cap is refused (400 cap_above_budget) with the figure and the window
// it comes from, through the tokens API and the console alike; a tenant without a budget has no such ceiling.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";
import { startTestGateway } from "../helpers/gateway.js";

const keys = { daily: generateTenantKey(), total: generateTenantKey(), free: generateTenantKey() };
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
let gw: Awaited<ReturnType<typeof startTestGateway>>;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  gw = await startTestGateway(
    {
      upstream: { baseUrl: upstream.url },
      cache: { enabled: false },
      tenants: [
        { id: "daily", scopes: ["search"], keys: [{ hash: await hashTenantKey(keys.daily) }], budget: { daily: "1.00", monthly: "20.00" } },
        {
          id: "total",
          scopes: ["search", "jobs"],
          keys: [{ hash: await hashTenantKey(keys.total) }],
          budget: { daily: "5.00", total: "0.050" },
        },
        { id: "free", scopes: ["search"], keys: [{ hash: await hashTenantKey(keys.free) }] },
      ],
    },
    { upstreamApiKey: "up-key", tokenSecret: randomBytes(32).toString("hex") },
  );
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const mint = async (key: string, body: Record<string, unknown>) => {
  const r = await fetch(`${gw.url}/_tollgate/tokens`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ ttlSeconds: 60, ...body }),
  });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
};

describe("a token's cap and its tenant's budget", () => {
  it.each([
    ["search", {}],
    ["mcp", { scopes: ["search"] }],
  ])("refuses a %s token whose cap is above the daily budget, naming the figure; the budget itself is allowed", async (kind, extra) => {
    const over = await mint(keys.daily, { kind, cap: "1.000001", ...extra });
    expect(over.status).toBe(400);
    expect(over.json).toMatchObject({ code: "cap_above_budget", field: "cap", limit: "1.00", window: "daily" });
    expect(over.json.message).toMatch(/\$1\.000001 is above what the tenant's budget can pay, \$1\.00 \(its daily budget\)/);
    const exact = await mint(keys.daily, { kind, cap: "1.00", ...extra });
    expect(exact.status).toBe(201);
    expect(exact.json).toMatchObject({ cap: "1.00" });
  });

  it("counts a total budget as what remains of it", async () => {
    expect((await mint(keys.total, { kind: "search", cap: "0.05" })).status).toBe(201);
    // Spend $0.02 of the $0.05 total: 20 scrapes at $0.001.
    for (let i = 0; i < 20; i++) {
      const r = await fetch(`${gw.url}/api/scrape`, {
        method: "POST",
        headers: { "x-api-key": keys.total, "content-type": "application/json" },
        body: JSON.stringify({ url: `https://example.com/${i}` }),
      });
      expect(r.status).toBe(200);
    }
    const over = await mint(keys.total, { kind: "search", cap: "0.05" });
    expect(over.status).toBe(400);
    expect(over.json).toMatchObject({ code: "cap_above_budget", limit: "0.03", window: "total" });
    expect(over.json.message).toContain("what remains of its total budget");
    expect((await mint(keys.total, { kind: "search", cap: "0.03" })).status).toBe(201);
  });

  it("refuses it through the console's mint form as well (400, the figure on the page)", async () => {
    const login = await fetch(`${gw.url}/_tollgate/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: keys.daily }),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const page = await (await fetch(`${gw.url}/_tollgate/console/tokens`, { headers: { cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const form = (cap: string) =>
      fetch(`${gw.url}/_tollgate/console/tokens`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: csrf, target: "search", cap, ttlMinutes: "1" }),
      });
    const over = await form("2.00");
    expect(over.status).toBe(400);
    expect(await over.text()).toContain("$1.00 (its daily budget)");
    expect((await form("0.50")).status).toBe(201);
  });

  it("sets no ceiling for a tenant without a budget", async () => {
    expect((await mint(keys.free, { kind: "search", cap: "1000000" })).status).toBe(201);
  });
});
