// Admin changes reach every instance within a second, with no restart: two gateways on one shared state (memory in
// one process, and a real redis-server), a change made through one, observed through the other.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { memoryStores } from "../../src/state/memory.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const keys = { ops: generateTenantKey(), acme: generateTenantKey() };

async function fleetConfig(state: Record<string, unknown>) {
  return parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    state,
    tenants: [
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
      { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }] },
    ],
  });
}

/** Polls until `ok` holds, every 20 ms for at most `limitMs`; returns how long it took (or Infinity). */
async function within(limitMs: number, ok: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < limitMs) {
    if (await ok()) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 20));
  }
  return Infinity;
}

const whoamiStatus = async (url: string, key: string) => (await fetch(`${url}/_tollgate/whoami`, { headers: { "x-api-key": key } })).status;
const admin = async (url: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${url}/_tollgate/admin${path}`, {
    method,
    headers: { "x-api-key": keys.ops, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
};

function fleetSuite(name: string, start: () => Promise<[RunningGateway, RunningGateway]>) {
  describe(`admin changes across two instances (${name})`, () => {
    let a: RunningGateway;
    let b: RunningGateway;
    beforeAll(async () => {
      [a, b] = await start();
      // Both have loaded their snapshot once (as after any first request).
      expect(await whoamiStatus(a.url, keys.acme)).toBe(200);
      expect(await whoamiStatus(b.url, keys.acme)).toBe(200);
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
    });

    it("a key created through one instance works on the other within 1 s, and a revoked one stops within 1 s", async () => {
      const created = await admin(a.url, "POST", "/tenants/acme/keys", { label: "fleet" });
      expect(created.status).toBe(201);
      const appeared = await within(3000, async () => (await whoamiStatus(b.url, created.json.key)) === 200);
      expect(appeared).toBeLessThan(1000);
      const revoked = await admin(a.url, "DELETE", `/tenants/acme/keys/${created.json.id}`);
      expect(revoked.status).toBe(200);
      const gone = await within(3000, async () => (await whoamiStatus(b.url, created.json.key)) === 401);
      expect(gone).toBeLessThan(1000);
      console.log(`[${name}] key visible on the second instance after ${appeared.toFixed(0)} ms, revoked after ${gone.toFixed(0)} ms`);
    });

    it("a tenant created on one instance and disabled on the other follows on both", async () => {
      const made = await admin(b.url, "POST", "/tenants", { id: `t-${name}`, scopes: ["search"] });
      expect(made.status).toBe(201);
      expect(await within(3000, async () => (await whoamiStatus(a.url, made.json.key)) === 200)).toBeLessThan(1000);
      expect((await admin(a.url, "GET", `/tenants/t-${name}`)).json.scopes).toEqual(["search"]);
      expect((await admin(a.url, "POST", `/tenants/t-${name}/disable`)).status).toBe(200);
      expect(await within(3000, async () => (await whoamiStatus(b.url, made.json.key)) === 401)).toBeLessThan(1000);
    });

    it("of two revocations of the fleet's last two admin keys sent at once to the two instances, one is refused (409)", async () => {
      // ops' config key gets an end (2100) once another admin key without one exists: the two raced are then the last.
      const first = await admin(a.url, "POST", "/tenants/ops/keys", { label: "a0" });
      const opsKey = (await admin(a.url, "GET", "/tenants/ops")).json.keys[0].id;
      expect((await admin(a.url, "POST", `/tenants/ops/keys/${opsKey}/expire`, { expiresAt: "2100-01-01T00:00:00Z" })).status).toBe(200);
      const ops2 = await admin(a.url, "POST", "/tenants", { id: `ops2-${randomBytes(3).toString("hex")}`, scopes: ["admin"] });
      expect(ops2.status).toBe(201);
      const second = ops2.json.tenant.id as string;
      let pair = { a: first.json.id as string, b: ops2.json.keyId as string };
      for (let round = 0; round < 6; round++) {
        const [x, y] = await Promise.all([
          admin(a.url, "DELETE", `/tenants/ops/keys/${pair.a}`),
          admin(b.url, "DELETE", `/tenants/${second}/keys/${pair.b}`),
        ]);
        expect([x.status, y.status].sort(), `round ${round}: ${JSON.stringify([x.json, y.json])}`).toEqual([200, 409]);
        expect([x, y].find((r) => r.status === 409)!.json.code).toBe("last_admin_key");
        // The next pair: fresh keys on both, then the survivor goes (allowed: there are two more).
        const na = await admin(a.url, "POST", "/tenants/ops/keys", { label: `a${round + 1}` });
        const nb = await admin(b.url, "POST", `/tenants/${second}/keys`, { label: `b${round + 1}` });
        const survivor = x.status === 409 ? ["ops", pair.a] : [second, pair.b];
        expect((await admin(a.url, "DELETE", `/tenants/${survivor[0]}/keys/${survivor[1]}`)).status).toBe(200);
        pair = { a: na.json.id, b: nb.json.id };
      }
    });
  });
}

const secrets = () => ({ tokenSecret: randomBytes(32).toString("hex") });

fleetSuite("memory", async () => {
  const config = await fleetConfig({ backend: "memory" });
  const stores = memoryStores();
  const s = secrets();
  return Promise.all([
    startNodeGateway({ config, secrets: s, deps: { stores } }),
    startNodeGateway({ config, secrets: s, deps: { stores } }),
  ]) as Promise<[RunningGateway, RunningGateway]>;
});

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});

fleetSuite("redis", async () => {
  const config = await fleetConfig({ backend: "redis", redisUrl: redis.url });
  const s = secrets();
  return Promise.all([startNodeGateway({ config, secrets: s }), startNodeGateway({ config, secrets: s })]) as Promise<
    [RunningGateway, RunningGateway]
  >;
});

describe("config file and state: which wins across a restart (Redis)", () => {
  it("re-seeds the config file's tenants from the file, and keeps what operators held on them (one owner per tenant)", async () => {
    const redisUrl = `${redis.url}/3`;
    const s = secrets();
    const first = await startNodeGateway({ config: await fleetConfig({ backend: "redis", redisUrl }), secrets: s });
    try {
      // The file owns acme: a settings edit is refused; a disable (an operator's incident action) is held.
      expect((await admin(first.url, "PATCH", "/tenants/acme", { budget: { daily: "1.00" } })).status).toBe(409);
      expect((await admin(first.url, "POST", "/tenants/acme/disable")).status).toBe(200);
    } finally {
      await first.close();
    }
    // The next start's file gives acme a different budget and ops a new scope list.
    const edited = await fleetConfig({ backend: "redis", redisUrl });
    edited.tenants[0]!.scopes = ["admin", "search"];
    edited.tenants[1]!.budget = { daily: "9.00" };
    const second = await startNodeGateway({ config: edited, secrets: s });
    try {
      const acme = (await admin(second.url, "GET", "/tenants/acme")).json;
      expect(acme).toMatchObject({ source: "api", enabled: false, budget: { daily: "9.00" } });
      const ops = (await admin(second.url, "GET", "/tenants/ops")).json;
      expect(ops).toMatchObject({ source: "config", scopes: ["admin", "search"] });
    } finally {
      await second.close();
    }
  });
});
