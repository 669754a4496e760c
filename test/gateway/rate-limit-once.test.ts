// Each request is counted once by the per-tenant rate limit: the gateway's own rows count in their chain like every
// row (there is no second limiter on the /_tollgate prefix), so ratelimit-remaining falls by exactly 1 a request.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";

describe("rate limit: once per request", () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let gw: RunningGateway;
  // The middle of a minute window, so no window boundary falls inside the test.
  const base = Math.ceil(Date.now() / 60_000) * 60_000 + 1_000;
  const key = generateTenantKey();
  const SESSION = "sess-owned-by-acme";

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
      upstream: { baseUrl: upstream.url },
      tenants: [{ id: "acme", quotas: { requestsPerMinute: 100 }, keys: [{ hash: await hashTenantKey(key) }] }],
    });
    gw = await startNodeGateway({
      config,
      secrets: { upstreamApiKey: "up_" + "k".repeat(30), tokenSecret: "t".repeat(40) },
      deps: { now: () => base },
    });
    await gw.gateway.stores.ownership.claim("session", SESSION, "acme");
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const remaining = (r: Response) => Number(r.headers.get("ratelimit-remaining"));
  const action = () =>
    fetch(`${gw.url}/_tollgate/computer-action/${SESSION}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ action: "screenshot" }),
    });
  const usage = () => fetch(`${gw.url}/_tollgate/usage`, { headers: { "x-api-key": key } });

  it("lowers ratelimit-remaining by exactly 1 per computer action (POST /_tollgate/computer-action/:id)", async () => {
    const first = await action();
    // The whole chain ran, the handler included: the echo upstream knows no such session to act on.
    expect(((await first.json()) as { code: string }).code).toBe("session_endpoint_unavailable");
    expect(first.headers.get("ratelimit-limit")).toBe("100");
    let last = remaining(first);
    for (let i = 0; i < 3; i++) {
      const r = await action();
      await r.body?.cancel();
      expect(remaining(r)).toBe(last - 1);
      last = remaining(r);
    }
  });

  it("lowers it by exactly 1 per own JSON request (GET /_tollgate/usage), and across rows alike", async () => {
    const a = await usage();
    expect(a.status).toBe(200);
    const b = await usage();
    expect(b.status).toBe(200);
    expect(remaining(b)).toBe(remaining(a) - 1);
    const c = await action();
    await c.body?.cancel();
    expect(remaining(c)).toBe(remaining(b) - 1);
    const d = await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": key } });
    expect(await d.json()).toEqual({ tenant: "acme", scopes: expect.any(Array) });
    expect(remaining(d)).toBe(remaining(c) - 1);
  });
});
