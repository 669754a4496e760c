// Credit settlement across two gateway instances sharing one redis-server, against the emulator with the unmodified
// SDK: a session made on one instance and stopped on the other settles to the upstream's creditsUsed once; a late
// figure is corrected by whichever reconciler gets there first, and only once; both instances see the same drift and
// the alert fires once for the fleet; an export from either sums to the shared ledger, a multiplier in force.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { stateKeys } from "../../src/state/keys.js";
import { atomicToUsd, usdToAtomic } from "../../src/payments/money.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const atomicOf = (credits: number) => BigInt(Math.round(credits * 1000));

describe("credit settlement across two instances on one Redis", () => {
  let emu: EmulatorHandle;
  let redis: RedisServer;
  let a: RunningGateway;
  let b: RunningGateway;
  const keys = { acme: generateTenantKey(), resale: generateTenantKey(), ops: generateTenantKey() };
  let upstream: Hyperbrowser;
  const via = (g: RunningGateway, key: string) => new Hyperbrowser({ apiKey: key, baseUrl: g.url });

  beforeAll(async () => {
    [emu, redis] = await Promise.all([startEmulator({ modules: ["sessions"] }), startRedisServer()]);
    upstream = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: emu.controlUrl, allowedHosts: [new URL(emu.controlUrl).host] },
      state: { backend: "redis", redisUrl: `${redis.url}/3` },
      credits: { driftAlertUsd: "0.00001" },
      tenants: [
        { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }] },
        { id: "resale", creditMultiplier: "0.8", keys: [{ hash: await hashTenantKey(keys.resale) }] },
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
      ],
    });
    const secrets = { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") };
    a = await startNodeGateway({ config, secrets, logSink: () => {} });
    b = await startNodeGateway({ config, secrets, logSink: () => {} });
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await emu?.close();
    await redis?.stop();
  });

  const entriesOf = (tenant: string, resource: string) => a.gateway.services.stores.ledger.list({ tenant, resource });

  it("a session made on one instance and stopped on the other settles once, to the upstream's creditsUsed", async () => {
    const session = await via(a, keys.acme).sessions.create({ timeoutMinutes: 5 });
    await sleep(2_000);
    await via(b, keys.acme).sessions.stop(session.id);
    const credits = (await upstream.sessions.get(session.id)).creditsUsed!;
    expect(credits).toBeGreaterThan(0);
    const entries = await entriesOf("acme", `session:${session.id}`);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ state: "committed", settledFrom: "upstream", amount: atomicOf(credits).toString() });
    // A later read on the first instance (the session is closed upstream) settles nothing more.
    await via(a, keys.acme).sessions.get(session.id);
    expect(await entriesOf("acme", `session:${session.id}`)).toEqual(entries);
  }, 60_000);

  it("a late figure is corrected by the first reconciler to read it, once, at the tenant's multiplier", async () => {
    emu.credits.schedule.lateUsageMs = 4_000;
    try {
      const session = await via(a, keys.resale).sessions.create({ timeoutMinutes: 5 });
      await sleep(1_000);
      await via(a, keys.resale).sessions.stop(session.id);
      expect((await entriesOf("resale", `session:${session.id}`))[0]).toMatchObject({
        settledFrom: "estimate",
        amount: String((1700 * 8) / 10),
      });
      let credits = 0;
      for (let i = 0; i < 40 && !credits; i++) {
        await sleep(250);
        credits = (await upstream.sessions.get(session.id)).creditsUsed ?? 0;
      }
      expect(credits).toBeGreaterThan(0);
      const [fromB, fromA] = [await b.gateway.reconciler.runOnce(), await a.gateway.reconciler.runOnce()];
      expect(fromB.creditsCorrected + fromA.creditsCorrected).toBeLessThanOrEqual(1);
      const cost = atomicOf(credits);
      const charged = (cost * 800_000n + 999_999n) / 1_000_000n;
      expect((await entriesOf("resale", `session:${session.id}`))[0]).toMatchObject({
        settledFrom: "upstream",
        multiplier: "0.8",
        amount: charged.toString(),
        costAmount: cost.toString(),
      });
    } finally {
      emu.credits.schedule.lateUsageMs = 0;
    }
  }, 60_000);

  it("both instances see the same drift from work done with the operator's key, and the fleet alerts once", async () => {
    const { kv, audit } = a.gateway.services.stores;
    await kv.delete(stateKeys.creditsDrift("baseline"));
    await kv.delete(stateKeys.creditsDrift("alerted"));
    const alerts = async () => (await audit.list({ limit: 1000 })).filter((x) => x.action === "alert.credits.drift").length;
    const before = await alerts();
    expect((await a.gateway.reconciler.runOnce()).creditsDrift).toMatchObject({ driftUsd: "0.00" });
    // The team's usage is in whole credits (as both SDKs read it): for this test the emulator bills browser time at a
    // rate that makes the direct session's second whole credits, and the drift is what the team's usage grew by.
    const usageBefore = (await upstream.team.getCreditInfo()).usage;
    emu.credits.schedule.browserMinute = 240;
    onTestFinished(() => {
      emu.credits.schedule.browserMinute = 2;
    });
    const direct = await upstream.sessions.create({});
    await sleep(1_000);
    await upstream.sessions.stop(direct.id);
    const drift = atomicToUsd(atomicOf((await upstream.team.getCreditInfo()).usage - usageBefore));
    const [ra, rb] = await Promise.all([a.gateway.reconciler.runOnce(), b.gateway.reconciler.runOnce()]);
    expect(ra.creditsDrift).toMatchObject({ driftUsd: drift, alerting: true });
    expect(rb.creditsDrift).toMatchObject({ driftUsd: drift, alerting: true });
    await Promise.all([a.gateway.reconciler.runOnce(), b.gateway.reconciler.runOnce()]);
    expect((await alerts()) - before).toBe(1);
  }, 60_000);

  it("an export from either instance sums exactly to the shared ledger", async () => {
    // Yesterday to tomorrow (UTC): entries made before midnight still count if the export runs after it.
    const today = Date.parse(new Date().toISOString().slice(0, 10));
    const day = new Date(today - 86_400_000).toISOString().slice(0, 10);
    const to = new Date(today + 86_400_000).toISOString().slice(0, 10);
    const total = (await a.gateway.services.stores.ledger.list({}))
      .filter((e) => e.state !== "released" && !e.tenant.startsWith("token:"))
      .reduce((s, e) => s + BigInt(e.amount), 0n);
    expect(total).toBeGreaterThan(0n);
    for (const g of [a, b]) {
      const x = await (
        await fetch(`${g.url}/_tollgate/admin/usage/export?from=${day}&to=${to}&format=json`, { headers: { "x-api-key": keys.ops } })
      ).json();
      expect((x.rows as Array<{ amountUsd: string }>).reduce((s, r) => s + usdToAtomic(r.amountUsd), 0n)).toBe(total);
      const resale = (x.rows as Array<{ tenant: string; amountUsd: string; costUsd: string }>).find((r) => r.tenant === "resale")!;
      expect(usdToAtomic(resale.amountUsd)).toBeLessThan(usdToAtomic(resale.costUsd)); // a discount
    }
  });
});
