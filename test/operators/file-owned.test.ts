// One owner per tenant (issue 54; docs/config-as-code.md#one-owner-per-tenant), on two gateways sharing one real
// redis-server and one config file: the admin API refuses to change a tenant the file owns (409 config_conflict, the
// tenant, the file, what to do), and the operational actions it keeps (disable, enable, revoke a key, issue an extra
// key, bring a key's expiry forward) survive a reload of the file on both instances and a restart of the fleet —
// with the file edited while it was down, whose edit applies under them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey, keyIdOf } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const keys = { ops: generateTenantKey(), acme: generateTenantKey(), b1: generateTenantKey(), b2: generateTenantKey() };
let redis: RedisServer;
let dir: string;
let file: string;
let raw: any;
let fleet: RunningGateway[] = [];

const admin = async (gw: RunningGateway, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${gw.url}/_tollgate/admin${path}`, {
    method,
    headers: { "x-api-key": keys.ops, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
};
/** What a key gets from GET /_tollgate/whoami on `gw`: 200, or the refusal's code. */
const whoami = async (gw: RunningGateway, key: string) => {
  const res = await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": key } });
  return res.status === 200 ? 200 : ((await res.json()) as { code: string }).code;
};
const start = async () => {
  const secrets = { upstreamApiKey: "k", tokenSecret: "t".repeat(48) };
  return startNodeGateway({ config: parseConfig(raw), secrets, configFile: file, env: {}, logSink: () => {} });
};
const writeFileConfig = () => writeFile(file, JSON.stringify(raw));
const reloadAll = () => Promise.all(fleet.map((gw) => gw.reload!("SIGHUP")));

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(join(tmpdir(), "tg-file-owned-"));
  file = join(dir, "tollgate.json");
  raw = {
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    state: { backend: "redis", redisUrl: `${redis.url}/3` },
    secrets: { checkSeconds: 600 }, // only reload() reads the file again here
    tenants: [
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
      { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }], budget: { daily: "5.00" } },
      { id: "beta", keys: [{ hash: await hashTenantKey(keys.b1) }, { hash: await hashTenantKey(keys.b2) }], budget: { daily: "1.00" } },
      { id: "off", enabled: false, keys: [{ hash: await hashTenantKey(generateTenantKey()) }] },
    ],
  };
  await writeFileConfig();
  fleet = await Promise.all([start(), start()]);
}, 60_000);
afterAll(async () => {
  for (const gw of fleet) await gw.close();
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("one owner per tenant: what the file owns, the admin API refuses; what operators hold, nothing undoes", () => {
  let extra = "";
  let extraId = "";
  const b2Id = async () => keyIdOf(await hashTenantKey(keys.b2));

  it("refuses every settings change to a file-owned tenant, naming the tenant, the file and what to do", async () => {
    const [a] = fleet;
    for (const [method, path, body] of [
      ["PATCH", "/tenants/beta", { budget: { daily: "9.00" } }],
      ["PUT", "/tenants/beta/budget", { daily: "9.00" }],
      ["PUT", "/tenants/beta/policy", { maxCrawlPages: 3 }],
      ["PUT", "/tenants/beta/scopes", ["search"]],
      ["PATCH", "/tenants/beta", { agentPolicies: { docs: { maxCrawlPages: 3 } } }],
      ["DELETE", "/tenants/beta", undefined],
      // Enabling what the file disables would fight the file too.
      ["POST", "/tenants/off/enable", undefined],
    ] as const) {
      const r = await admin(a!, method, path, body);
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.json)}`).toBe(409);
      expect(r.json).toMatchObject({ code: "config_conflict", file });
      expect(r.json.message).toContain(`is owned by the gateway's config file ${file}; edit it there (a reload applies it)`);
      expect(r.json.message).toContain("or remove the tenant from that file");
    }
    expect((await admin(a!, "GET", "/tenants/beta")).json.budget).toEqual({ daily: "1.00" });
  });

  it("lets operators disable, revoke a key, issue one and bring an expiry forward on it", async () => {
    const [a, b] = fleet;
    expect((await admin(a!, "POST", "/tenants/acme/disable")).status).toBe(200);
    const b1Id = keyIdOf(await hashTenantKey(keys.b1));
    expect((await admin(a!, "DELETE", `/tenants/beta/keys/${b1Id}`)).status).toBe(200);
    const made = await admin(a!, "POST", "/tenants/beta/keys", { label: "incident" });
    expect(made.status).toBe(201);
    ({ key: extra, id: extraId } = made.json);
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    expect((await admin(a!, "POST", `/tenants/beta/keys/${await b2Id()}/expire`, { expiresAt: soon })).status).toBe(200);
    for (const gw of [a!, b!]) {
      expect(await whoami(gw, keys.acme)).toBe("tenant_disabled");
      expect(await whoami(gw, keys.b1)).toBe("invalid_api_key");
      expect(await whoami(gw, extra)).toBe(200);
      expect(await whoami(gw, keys.b2)).toBe(200);
    }
  });

  it("a reload of the file on both instances applies its edit under the holds, and undoes none", async () => {
    raw.tenants[1].budget.daily = "6.00";
    raw.tenants[2].budget.daily = "2.00";
    await writeFileConfig();
    await reloadAll();
    for (const gw of fleet) {
      expect((await admin(gw, "GET", "/tenants/acme")).json).toMatchObject({ enabled: false, budget: { daily: "6.00" } });
      const beta = (await admin(gw, "GET", "/tenants/beta")).json;
      expect(beta.budget).toEqual({ daily: "2.00" });
      expect(beta.keys.map((k: any) => k.id).sort()).toEqual([await b2Id(), extraId].sort());
      const b2 = await b2Id();
      expect(beta.keys.find((k: any) => k.id === b2).expiresAt).toBeTruthy();
      expect(await whoami(gw, keys.acme)).toBe("tenant_disabled");
      expect(await whoami(gw, keys.b1)).toBe("invalid_api_key");
      expect(await whoami(gw, extra)).toBe(200);
    }
    // The holds are not drift: no apply would undo them.
    expect((await admin(fleet[0]!, "GET", "/config/drift")).json).toMatchObject({ inSync: true });
  }, 30_000);

  it("a restart of the fleet (the file edited while it was down) keeps every hold and applies the edit", async () => {
    for (const gw of fleet) await gw.close();
    fleet = [];
    raw.tenants[2].budget.daily = "3.00";
    await writeFileConfig();
    fleet = await Promise.all([start(), start()]);
    for (const gw of fleet) {
      expect(await whoami(gw, keys.acme)).toBe("tenant_disabled");
      expect(await whoami(gw, keys.b1)).toBe("invalid_api_key");
      expect(await whoami(gw, extra)).toBe(200);
      expect(await whoami(gw, keys.b2)).toBe(200);
      const beta = (await admin(gw, "GET", "/tenants/beta")).json;
      expect(beta.budget).toEqual({ daily: "3.00" });
      expect(beta.keys.map((k: any) => k.id).sort()).toEqual([await b2Id(), extraId].sort());
    }
  }, 60_000);

  it("enable lifts the operator's disable, and a reload keeps it lifted; the extra key can be revoked", async () => {
    const [a] = fleet;
    expect((await admin(a!, "POST", "/tenants/acme/enable")).json.enabled).toBe(true);
    expect((await admin(a!, "DELETE", `/tenants/beta/keys/${extraId}`)).status).toBe(200);
    raw.tenants[1].budget.daily = "7.00";
    await writeFileConfig();
    await reloadAll();
    for (const gw of fleet) {
      expect(await whoami(gw, keys.acme)).toBe(200);
      expect(await whoami(gw, extra)).toBe("invalid_api_key");
      expect((await admin(gw, "GET", "/tenants/acme")).json.budget).toEqual({ daily: "7.00" });
    }
    // Every operational action is audited like any other change.
    const actions = (await admin(a!, "GET", "/audit?limit=100")).json.entries.map((e: any) => `${e.action} ${e.target}`);
    expect(actions).toEqual(
      expect.arrayContaining(["tenant.disable tenant:acme", "tenant.enable tenant:acme", "key.create key:beta/" + extraId]),
    );
  }, 30_000);
});
