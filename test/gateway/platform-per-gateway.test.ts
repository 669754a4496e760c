// The runtime's speed helpers are each gateway's own (issue 41): two gateways in one process, over real sockets, keep
// the helpers they were given. Once these were module-level setters the Node entry filled, so the second gateway
// started in a process replaced (or turned off) the first's.
import { randomBytes } from "node:crypto";
import type { Context } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import type { PlatformSpeed } from "../../src/web/speed.js";

const key = generateTenantKey();

async function configWith(directRelay: boolean) {
  return parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "silent", directRelay },
    // nothing here reaches the upstream
    upstream: { baseUrl: "http://127.0.0.1:9" },
    tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }] }],
  });
}
const secrets = () => ({ upstreamApiKey: "upstream-key", tokenSecret: randomBytes(32).toString("hex") });

/** Helpers that do what the Web default does, and note each use in `seen`. */
function recording(seen: string[]): PlatformSpeed {
  return {
    hotHeader: (c: Context, name) => {
      seen.push(`read ${name}`);
      return c.req.header(name);
    },
    heldBody: () => {
      seen.push("held body");
      return undefined;
    },
    writeUnread: (_res, name) => {
      seen.push(`write ${name}`);
      return false;
    },
  };
}

describe("two Node gateways in one process, fast paths on in one and off in the other", () => {
  let on: RunningGateway;
  let off: RunningGateway;
  beforeAll(async () => {
    on = await startNodeGateway({ config: await configWith(true), secrets: secrets(), logSink: () => {} });
    // started second: a process-wide setter would now be the standard path's for both
    off = await startNodeGateway({ config: await configWith(false), secrets: secrets(), logSink: () => {} });
  }, 60_000);
  afterAll(async () => {
    await on?.close();
    await off?.close();
  });

  it("each keeps its own helpers", () => {
    const fast = on.gateway.services.platform;
    expect(typeof fast.hotHeader).toBe("function");
    expect(typeof fast.heldBody).toBe("function");
    expect(typeof fast.heldText).toBe("function");
    expect(typeof fast.writeUnread).toBe("function");
    expect(off.gateway.services.platform).toEqual({});
  });

  it("both answer a keyed request and a JSON body the same way", async () => {
    for (const g of [on, off]) {
      const who = await fetch(`${g.url}/_tollgate/whoami`, { headers: { "x-api-key": key } });
      expect(who.status).toBe(200);
      expect(who.headers.get("x-request-id")).toMatch(/./);
      expect(((await who.json()) as { tenant: string }).tenant).toBe("acme");
      const bad = await fetch(`${g.url}/_tollgate/tokens`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: '{"kind":',
      });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { code: string }).code).toBe("invalid_json");
    }
  });
});

describe("two gateways in one process given different helpers", () => {
  const seenA: string[] = [];
  const seenB: string[] = [];
  let a: RunningGateway;
  let b: RunningGateway;
  beforeAll(async () => {
    a = await startNodeGateway({
      config: await configWith(false),
      secrets: secrets(),
      logSink: () => {},
      deps: { platform: recording(seenA) },
    });
    b = await startNodeGateway({
      config: await configWith(false),
      secrets: secrets(),
      logSink: () => {},
      deps: { platform: recording(seenB) },
    });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const call = (g: RunningGateway) =>
    fetch(`${g.url}/_tollgate/tokens`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: '{"kind":"search","cap":"0.10"}',
    });

  it("a request to one uses that gateway's helpers only", async () => {
    const r = await call(a);
    expect(r.status).toBe(201);
    await r.arrayBuffer();
    expect(seenA).toContain("read x-api-key");
    expect(seenA).toContain("held body");
    expect(seenA).toContain("write x-request-id");
    expect(seenB).toEqual([]);

    seenA.length = 0;
    const s = await call(b);
    expect(s.status).toBe(201);
    await s.arrayBuffer();
    expect(seenB).toContain("read x-api-key");
    expect(seenB).toContain("held body");
    expect(seenB).toContain("write x-request-id");
    expect(seenA).toEqual([]);
  });
});
