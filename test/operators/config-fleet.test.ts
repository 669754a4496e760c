// Config as code across a fleet (docs/config-as-code.md): two gateways on one real redis-server, both reloading the
// same config file at once: each change is applied (and audited) once, seen on both; the drift view reads the same
// last apply from either instance.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const ops = generateTenantKey();
const later = generateTenantKey();
let redis: RedisServer;
let dir: string;
let a: RunningGateway;
let b: RunningGateway;

const admin = async (gw: RunningGateway, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${gw.url}/_tollgate/admin${path}`, {
    method,
    headers: { "x-api-key": ops, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
};

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(join(tmpdir(), "tg-config-fleet-"));
  const file = join(dir, "tollgate.json");
  const raw = {
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    state: { backend: "redis", redisUrl: `${redis.url}/5` },
    secrets: { checkSeconds: 600 },
    tenants: [
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] },
      { id: "acme", keys: [{ hash: await hashTenantKey(generateTenantKey()) }], budget: { daily: "5.00" } },
    ],
  };
  await writeFile(file, JSON.stringify(raw));
  const secrets = { upstreamApiKey: "k", tokenSecret: randomBytes(32).toString("hex") };
  const start = () => startNodeGateway({ config: parseConfig(raw), secrets, configFile: file, env: {} });
  [a, b] = await Promise.all([start(), start()]);
  // The file changes; both instances are told at once (as a SIGHUP to every pod would).
  (raw.tenants[1] as { budget?: unknown }).budget = { daily: "8.00" };
  raw.tenants.push({ id: "later", keys: [{ hash: await hashTenantKey(later) }] } as (typeof raw.tenants)[number]);
  await writeFile(file, JSON.stringify(raw));
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("config reload across two instances (Redis)", () => {
  it("two instances reloading the same file at once apply each change once", async () => {
    await Promise.all([a.reload!("SIGHUP"), b.reload!("SIGHUP")]);
    for (const gw of [a, b]) {
      expect((await admin(gw, "GET", "/tenants/acme")).json.budget).toEqual({ daily: "8.00" });
      expect((await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": later } })).status).toBe(200);
    }
    const audit = (await admin(a, "GET", "/audit?action=config.")).json.entries as Array<{ action: string; target: string }>;
    expect(audit.filter((e) => e.action === "config.tenant.update" && e.target === "tenant:acme")).toHaveLength(1);
    expect(audit.filter((e) => e.action === "config.tenant.create" && e.target === "tenant:later")).toHaveLength(1);
    expect(audit.filter((e) => e.action === "config.apply")).toHaveLength(1);
  }, 30_000);

  // A reload applies the file's changed tenant blocks but is not an operator's apply: drift stays measured against the
  // file itself (issue 54: a reload never replaces what the operator applied, nor makes its own edits the base).
  // One owner per tenant: the file's tenants (those a reload created too) refuse admin edits on every instance.
  it("an edit of the file's tenant is refused on either instance, naming the file; nothing drifts", async () => {
    for (const gw of [a, b]) {
      const r = await admin(gw, "PUT", "/tenants/later/quotas", { requestsPerMinute: 30 });
      expect(r.status).toBe(409);
      expect(r.json).toMatchObject({ code: "config_conflict", tenant: "later", file: expect.stringContaining("tollgate.json") });
    }
    const drift = (await admin(b, "GET", "/config/drift")).json;
    expect(drift).toMatchObject({ inSync: true, against: { kind: "config-file" } });
  });
});
