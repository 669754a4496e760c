// Tenant secrets through the API, on a fleet: two Node gateways on one real redis-server. A tenant writes its own
// (`/_tollgate/secrets/NAME`), an operator any tenant's (`/_tollgate/admin/secrets/TENANT/NAME`); no answer, log line,
// audit entry or stored record holds the value; another tenant's name is not seen; a change or a deletion made on one
// instance is what the other's `services.vault.valueFor` reads at once; rotating TOLLGATE_SECRET_KEYS keeps old values.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const keys = { acme: generateTenantKey(), initech: generateTenantKey(), ops: generateTenantKey() };
const VALUE = `sk-live-${randomBytes(12).toString("hex")}`;
const NEW_VALUE = `sk-next-${randomBytes(12).toString("hex")}`;
const sealKey = { kid: "k1", secret: randomBytes(32).toString("hex") };
let redis: RedisServer;
let config: ReturnType<typeof parseConfig>;
const gateways: RunningGateway[] = [];
const logs: string[] = [];

const call = async (gw: RunningGateway, method: string, path: string, key: string, body?: unknown) => {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
};

beforeAll(async () => {
  redis = await startRedisServer();
  config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "debug" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    state: { backend: "redis", redisUrl: redis.url },
    tenants: [
      { id: "acme", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(keys.acme) }] },
      { id: "initech", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(keys.initech) }] },
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
    ],
  });
  for (let i = 0; i < 2; i++)
    gateways.push(
      await startNodeGateway({
        config,
        secrets: { upstreamApiKey: "k", tokenSecret: "t".repeat(40), secretKeys: [sealKey] },
        logSink: (l) => logs.push(l),
      }),
    );
}, 60_000);

afterAll(async () => {
  for (const g of gateways) await g.close().catch(() => {});
  await redis?.stop();
});

describe("tenant secrets API", () => {
  it("a tenant writes a secret it can never read back; its rules and last use are shown", async () => {
    const [a] = gateways;
    const put = await call(a!, "PUT", "/_tollgate/secrets/OPENAI", keys.acme, {
      value: VALUE,
      hosts: ["API.Example.com", "api.example.com:8443"],
      methods: ["POST"],
      paths: ["/v1/"],
    });
    expect(put.status).toBe(201);
    expect(put.json).toMatchObject({
      name: "OPENAI",
      hosts: ["api.example.com", "api.example.com:8443"],
      methods: ["POST"],
      paths: ["/v1/"],
      header: "authorization",
      format: "Bearer {}",
      sandboxes: "all",
      version: 1,
      lastUsedAt: null,
    });
    expect(put.text).not.toContain(VALUE);
    const got = await call(gateways[1]!, "GET", "/_tollgate/secrets/OPENAI", keys.acme);
    expect(got.status).toBe(200);
    expect(got.text).not.toContain(VALUE);
    const list = await call(gateways[1]!, "GET", "/_tollgate/secrets", keys.acme);
    expect(list.json.secrets.map((s: { name: string }) => s.name)).toEqual(["OPENAI"]);
    const again = await call(a!, "PUT", "/_tollgate/secrets/OPENAI", keys.acme, { value: VALUE, hosts: ["api.example.com"] });
    expect(again.status).toBe(200);
    expect(again.json.version).toBe(2);
  });

  it("refuses a malformed secret, naming the field", async () => {
    const [a] = gateways;
    const cases: Array<[unknown, string]> = [
      [{ value: "x", hosts: ["https://api.example.com/"] }, "hosts.0"],
      [{ value: "x", hosts: [] }, "hosts"],
      [{ value: "", hosts: ["a.example"] }, "value"],
      [{ value: "x", hosts: ["a.example"], header: "host" }, "header"],
      [{ value: "x", hosts: ["a.example"], format: "Bearer" }, "format"],
      [{ value: "x", hosts: ["a.example"], extra: 1 }, ""],
    ];
    for (const [body, field] of cases) {
      const res = await call(a!, "PUT", "/_tollgate/secrets/BAD", keys.acme, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.code).toBe("invalid_body");
      if (field) expect(JSON.stringify(res.json.fields ?? res.json)).toContain(field);
    }
    expect((await call(a!, "PUT", "/_tollgate/secrets/1BAD", keys.acme, { value: "x", hosts: ["a.example"] })).status).toBe(400);
    expect((await call(a!, "GET", "/_tollgate/secrets/BAD", keys.acme)).status).toBe(404);
  });

  it("another tenant sees none of it; an operator names the tenant", async () => {
    const [a, b] = gateways;
    expect((await call(a!, "GET", "/_tollgate/secrets/OPENAI", keys.initech)).status).toBe(404);
    expect((await call(a!, "DELETE", "/_tollgate/secrets/OPENAI", keys.initech)).status).toBe(404);
    expect((await call(a!, "GET", "/_tollgate/secrets", keys.initech)).json).toEqual({ secrets: [] });
    // A tenant key reaches no admin row.
    expect((await call(a!, "GET", "/_tollgate/admin/secrets/acme", keys.acme)).status).toBe(403);
    const put = await call(b!, "PUT", "/_tollgate/admin/secrets/initech/GITHUB", keys.ops, {
      value: VALUE,
      hosts: ["api.github.com"],
      header: "X-Token",
      format: "token {}",
    });
    expect(put.status).toBe(201);
    expect(put.json).toMatchObject({ name: "GITHUB", header: "x-token", format: "token {}" });
    expect((await call(a!, "GET", "/_tollgate/secrets", keys.initech)).json.secrets.map((s: { name: string }) => s.name)).toEqual([
      "GITHUB",
    ]);
    expect((await call(a!, "GET", "/_tollgate/admin/secrets/acme/OPENAI", keys.ops)).json.name).toBe("OPENAI");
    expect((await call(a!, "GET", "/_tollgate/admin/secrets/nobody", keys.ops)).status).toBe(404);
    expect((await call(a!, "PUT", "/_tollgate/admin/secrets/nobody/X", keys.ops, { value: "x", hosts: ["a.example"] })).status).toBe(404);
  });

  it("a change or a deletion on one instance is what the other reads at once (services.vault.valueFor)", async () => {
    const [a, b] = gateways;
    const onB = b!.gateway.services.vault;
    expect(await onB.valueFor("acme", "OPENAI")).toEqual({
      name: "OPENAI",
      value: VALUE,
      hosts: ["api.example.com"],
      header: "authorization",
      format: "Bearer {}",
    });
    expect(await onB.valueFor("initech", "OPENAI")).toBeUndefined();
    await call(a!, "PUT", "/_tollgate/secrets/OPENAI", keys.acme, { value: NEW_VALUE, hosts: ["api.example.com"] });
    expect((await onB.valueFor("acme", "OPENAI"))?.value).toBe(NEW_VALUE);
    const del = await call(a!, "DELETE", "/_tollgate/secrets/OPENAI", keys.acme);
    expect(del.status).toBe(200);
    expect(await onB.valueFor("acme", "OPENAI")).toBeUndefined();
    expect((await call(b!, "GET", "/_tollgate/secrets/OPENAI", keys.acme)).status).toBe(404);
  });

  it("audits every change without the value; stores only ciphertext; logs no value", async () => {
    const audit = await call(gateways[0]!, "GET", "/_tollgate/admin/audit?limit=50", keys.ops);
    const actions = audit.json.entries
      .filter((e: { target: string }) => e.target.startsWith("secret:"))
      .map((e: { action: string; target: string }) => `${e.action} ${e.target}`);
    expect(actions).toEqual(
      expect.arrayContaining([
        "secret.create secret:acme/OPENAI",
        "secret.update secret:acme/OPENAI",
        "secret.delete secret:acme/OPENAI",
        "secret.create secret:initech/GITHUB",
      ]),
    );
    expect(audit.text).not.toContain(VALUE);
    expect(audit.text).not.toContain(NEW_VALUE);
    const stored = await gateways[0]!.gateway.services.stores.kv.get("sec:rec:initech:GITHUB");
    expect(stored).toBeDefined();
    expect(stored).not.toContain(VALUE);
    for (const l of logs) {
      expect(l).not.toContain(VALUE);
      expect(l).not.toContain(NEW_VALUE);
    }
  });

  it("a gateway whose keys were rotated (new first, old listed) still opens the old value; one without the old key cannot", async () => {
    const next = { kid: "k2", secret: randomBytes(32).toString("hex") };
    const rotated = await startNodeGateway({
      config,
      secrets: { upstreamApiKey: "k", tokenSecret: "t".repeat(40), secretKeys: [next, sealKey] },
    });
    const bare = await startNodeGateway({ config, secrets: { upstreamApiKey: "k", tokenSecret: "t".repeat(40), secretKeys: [next] } });
    try {
      expect((await rotated.gateway.services.vault.valueFor("initech", "GITHUB"))?.value).toBe(VALUE);
      await expect(bare.gateway.services.vault.valueFor("initech", "GITHUB")).rejects.toThrow(/key "k1"/);
      // Written again through the rotated gateway: sealed under the new key, which the bare one opens.
      await call(rotated, "PUT", "/_tollgate/admin/secrets/initech/GITHUB", keys.ops, { value: VALUE, hosts: ["api.github.com"] });
      expect((await bare.gateway.services.vault.valueFor("initech", "GITHUB"))?.value).toBe(VALUE);
    } finally {
      await rotated.close();
      await bare.close();
    }
  });
});
