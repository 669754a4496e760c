// The console across a fleet on Redis: a session begun on one instance is honoured by another (its record is in shared
// state, not in the process), a key created through one instance's console signs in on the other, and signing out on
// one ends the session everywhere.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const keys = { ops: generateTenantKey(), acme: generateTenantKey() };
let redis: RedisServer;
let a: RunningGateway;
let b: RunningGateway;

beforeAll(async () => {
  redis = await startRedisServer();
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    state: { backend: "redis", redisUrl: redis.url },
    tenants: [
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
      { id: "acme", budget: { daily: "1.00" }, keys: [{ hash: await hashTenantKey(keys.acme) }] },
    ],
  });
  const secrets = { tokenSecret: randomBytes(32).toString("hex") };
  [a, b] = await Promise.all([startNodeGateway({ config, secrets }), startNodeGateway({ config, secrets })]);
}, 60_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  await redis?.stop();
});

/** A form post as the console's own page sends it: same Origin as the instance it goes to. */
const post = (gw: RunningGateway, path: string, body: Record<string, string>, cookie?: string) =>
  fetch(`${gw.url}/_tollgate/console${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(body),
  });
const page = (gw: RunningGateway, path: string, cookie: string) =>
  fetch(`${gw.url}/_tollgate/console${path}`, { redirect: "manual", headers: { cookie } });

async function signIn(gw: RunningGateway, key: string): Promise<string> {
  const r = await post(gw, "/login", { key });
  expect(r.status).toBe(303);
  return r.headers.get("set-cookie")!.split(";")[0]!;
}

describe("the console on a fleet (Redis)", () => {
  it("honours a session begun on another instance, and its form token, and ends it everywhere on sign-out", async () => {
    const cookie = await signIn(a, keys.ops);
    const onB = await page(b, "/keys", cookie);
    expect(onB.status).toBe(200);
    const token = /name="_csrf" value="([^"]+)"/.exec(await onB.text())![1]!;
    const created = await post(b, "/tenants/acme/keys", { label: "made-on-b", _csrf: token }, cookie);
    expect(created.status).toBe(201);
    const key = /id="new-key">([^<]+)</.exec(await created.text())![1]!.trim();
    // The key made through b's console signs in on a at once (b reloaded its snapshot; a sees the new store version).
    let status = 0;
    for (let i = 0; i < 50 && status !== 303; i++) {
      status = (await post(a, "/login", { key })).status;
      if (status !== 303) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(303);
    expect((await post(a, "/logout", { _csrf: token }, cookie)).status).toBe(303);
    expect((await page(b, "/keys", cookie)).status).toBe(303);
  });

  it("uses a sign-in link once across the fleet: of exchanges racing on both instances exactly one signs in", async () => {
    for (let round = 0; round < 5; round++) {
      const minted = await fetch(`${a.url}/_tollgate/admin/console-links`, {
        method: "POST",
        headers: { "x-api-key": keys.ops, "content-type": "application/json" },
        body: "{}",
      });
      expect(minted.status).toBe(201);
      const code = new URL(((await minted.json()) as { url: string }).url).searchParams.get("code")!;
      const answers = await Promise.all([a, b, a, b].map((gw) => post(gw, "/link", { code })));
      expect(answers.map((r) => r.status).sort()).toEqual([303, 401, 401, 401]);
      const cookie = answers
        .find((r) => r.status === 303)!
        .headers.get("set-cookie")!
        .split(";")[0]!;
      // The session it opened is honoured by both instances.
      expect((await page(a, "/audit", cookie)).status).toBe(200);
      expect((await page(b, "/audit", cookie)).status).toBe(200);
    }
  });
});
