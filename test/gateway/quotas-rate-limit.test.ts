// Per-tenant requests per minute: 429 rate_limited with Retry-After at the limit, admitted again in the next window.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";

describe("per-tenant rate limit", () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let gw: RunningGateway;
  let offset = 0;
  // Start at the beginning of a minute so a window boundary cannot fall inside a test.
  const base = Math.ceil(Date.now() / 60_000) * 60_000 + 1_000;
  const keys = { chatty: generateTenantKey(), calm: generateTenantKey() };

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
      upstream: { baseUrl: upstream.url },
      tenants: [
        { id: "chatty", quotas: { requestsPerMinute: 3 }, keys: [{ hash: await hashTenantKey(keys.chatty) }] },
        { id: "calm", keys: [{ hash: await hashTenantKey(keys.calm) }] },
      ],
    });
    gw = await startNodeGateway({
      config,
      secrets: { upstreamApiKey: "up_" + "k".repeat(30), tokenSecret: "t".repeat(40) },
      deps: { now: () => base + offset },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const get = (key: string, path = "/api/sandboxes") => fetch(gw.url + path, { headers: { "x-api-key": key } });

  it("admits up to the limit, then refuses with 429 rate_limited, Retry-After and the figures", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await get(keys.chatty);
      expect(r.status).toBe(200);
      expect(r.headers.get("ratelimit-remaining")).toBe(String(2 - i));
    }
    const seen = upstream.seen.length;
    const r = await get(keys.chatty, "/_tollgate/whoami");
    expect(r.status).toBe(429);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(58);
    expect(Number(r.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(await r.json()).toMatchObject({
      code: "rate_limited",
      limit: 3,
      windowSeconds: 60,
      remaining: 0,
      resetAt: new Date(base - 1_000 + 60_000).toISOString(),
    });
    expect((await get(keys.chatty)).status).toBe(429);
    expect(upstream.seen.length).toBe(seen);
  });

  it("does not count another tenant's requests, nor requests without a valid key", async () => {
    expect((await get(keys.calm)).status).toBe(200);
    expect((await get("tg_unknown-key-000000000000000")).status).toBe(401);
  });

  it("admits again in the next window", async () => {
    offset = 60_000;
    expect((await get(keys.chatty)).status).toBe(200);
  });
});
