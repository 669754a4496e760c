// Budget alerts from two gateway instances racing paid searches on one budget: each threshold (and the exhaustion)
// reaches every webhook exactly once, signed, with failed deliveries retried. On memory (two instances in one
// process) and on a real redis-server. Then: alerts are recorded for the console with no receiver at all, and a
// draining gateway lets a delivery in flight (retry included) finish before it closes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { parseConfig } from "../../config/load.js";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { memoryStores } from "../../src/state/memory.js";
import { Webhook } from "standardwebhooks";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { search } from "../helpers/paid-stack.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

const SECRET = "whsec_" + randomBytes(24).toString("base64");
/** Receivers on 127.0.0.1 are refused unless allowlisted: these tests allowlist loopback (and http) explicitly. */
const LOOPBACK = { allowHttp: true, allowCidrs: ["127.0.0.0/8"] };
let emu: EmulatorHandle;
let redis: RedisServer;
beforeAll(async () => {
  [emu, redis] = await Promise.all([startEmulator({ modules: ["x402"] }), startRedisServer()]);
});
afterAll(async () => {
  await emu?.close();
  await redis?.stop();
});

async function until(limitMs: number, ok: () => boolean) {
  const t0 = Date.now();
  while (!ok() && Date.now() - t0 < limitMs) await new Promise((r) => setTimeout(r, 50));
}

function alertSuite(name: string, state: () => { config: Record<string, unknown>; shared?: () => ReturnType<typeof memoryStores> }) {
  describe(`budget alerts with two instances racing (${name})`, () => {
    let gws: RunningGateway[] = [];
    let plain: WebhookReceiver;
    let flaky: WebhookReceiver;
    const key = generateTenantKey();

    beforeAll(async () => {
      [plain, flaky] = await Promise.all([startWebhookReceiver(), startWebhookReceiver({ failFirst: 2 })]);
      const chain = emu.chain!;
      const wallet = await chain.createFundedWallet(10_000_000n);
      const s = state();
      const config = parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
        upstream: { baseUrl: emu.controlUrl, timeoutMs: 60_000 },
        payments: { networks: [chain.network], assets: [chain.token.address], maxPerRequest: "0.50" },
        cache: { enabled: false },
        state: s.config,
        alerts: { ...LOOPBACK, webhooks: [plain.url], initialBackoffMs: 50 },
        tenants: [
          {
            id: "acme",
            scopes: ["search"],
            keys: [{ hash: await hashTenantKey(key) }],
            budget: { daily: "0.05" },
            alerts: { webhooks: [flaky.url] },
          },
        ],
      });
      const secrets = {
        upstreamApiKey: emu.apiKey,
        walletKey: wallet.privateKey,
        tokenSecret: randomBytes(32).toString("hex"),
        webhookSecret: SECRET,
      };
      const stores = s.shared?.();
      gws = await Promise.all([0, 1].map(() => startNodeGateway({ config, secrets, deps: stores ? { stores } : {} })));
    }, 60_000);
    afterAll(async () => {
      for (const g of gws) await g.close();
      await plain?.close();
      await flaky?.close();
    });

    it("delivers 50, 80 and 100 % and the exhaustion exactly once each to every webhook, signed, retrying failures", async () => {
      // $0.005 a search, $0.05 a day: 10 are paid, the rest refused; both instances pay some.
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, i) => search(gws[i % 2]!.url, key, { query: `alert race ${name} ${i}` })),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(10);
      expect(results.filter((r) => r.status === 402)).toHaveLength(14);
      const day = new Date().toISOString().slice(0, 10);
      const expected = [
        `budget.threshold:acme:daily:${day}:50`,
        `budget.threshold:acme:daily:${day}:80`,
        `budget.threshold:acme:daily:${day}:100`,
        `budget.exhausted:acme:daily:${day}`,
      ];
      await until(15_000, () => plain.accepted().length >= 4 && flaky.accepted().length >= 4);
      await new Promise((r) => setTimeout(r, 500)); // anything late (a duplicate) would show up now

      for (const receiver of [plain, flaky]) {
        expect(
          receiver
            .accepted()
            .map((d) => d.id)
            .sort(),
        ).toEqual([...expected].sort());
        // Checked by the Standard Webhooks reference library, as a receiver would.
        for (const d of receiver.deliveries) {
          expect(d.signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
          expect(new Webhook(SECRET).verify(d.body, d.headers)).toEqual(JSON.parse(d.body));
          expect(() => new Webhook(`whsec_${randomBytes(24).toString("base64")}`).verify(d.body, d.headers)).toThrow();
        }
      }
      // The flaky receiver saw each event three times (503, 503, 200); the plain one once.
      expect(plain.deliveries).toHaveLength(4);
      expect(flaky.deliveries).toHaveLength(12);
      const t100 = plain.accepted().find((d) => d.json.data.threshold === 100)!.json;
      expect(t100).toMatchObject({
        type: "budget.threshold",
        data: { tenant: "acme", window: "daily", period: day, limit: "0.05", spent: "0.05" },
      });
      expect(Date.parse(t100.timestamp)).toBeGreaterThan(0);
      expect(plain.accepted().find((d) => d.json.type === "budget.exhausted")!.json.data).toMatchObject({
        onExhausted: "block",
        window: "daily",
      });
    }, 120_000);
  });
}

alertSuite("memory", () => {
  const stores = memoryStores();
  return { config: { backend: "memory" }, shared: () => stores };
});
alertSuite("redis", () => ({ config: { backend: "redis", redisUrl: redis.url } }));

/** A gateway with one tenant (`acme`, $0.005 searches against `daily`), an admin, and `alerts` as given. */
async function oneGateway(daily: string, alerts: Record<string, unknown>, logs: string[] = []) {
  const chain = emu.chain!;
  const wallet = await chain.createFundedWallet(10_000_000n);
  const key = generateTenantKey();
  const adminKey = generateTenantKey();
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "info" },
    upstream: { baseUrl: emu.controlUrl, timeoutMs: 60_000 },
    payments: { networks: [chain.network], assets: [chain.token.address], maxPerRequest: "0.50" },
    cache: { enabled: false },
    alerts,
    tenants: [
      { id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }], budget: { daily } },
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(adminKey) }] },
    ],
  });
  const secrets = { upstreamApiKey: emu.apiKey, walletKey: wallet.privateKey, tokenSecret: randomBytes(32).toString("hex") };
  const gw = await startNodeGateway({ config, secrets, logSink: (line) => logs.push(line) });
  const audit = async () => {
    const r = await fetch(`${gw.url}/_tollgate/admin/audit?limit=100`, { headers: { "x-api-key": adminKey } });
    expect(r.status).toBe(200);
    return ((await r.json()) as { entries: any[] }).entries.filter((e) => e.action.startsWith("alert."));
  };
  return { gw, key, audit };
}

describe("budget alerts beyond the webhooks", () => {
  it("records every threshold crossed, and the exhaustion, once each in the audit log when the tenant has no receivers", async () => {
    const { gw, key, audit } = await oneGateway("0.02", {});
    try {
      // $0.005 a search, $0.02 a day: 50 %, 75 %, then 100 % (80 and 100 crossed together), and the fifth is refused.
      for (let i = 0; i < 4; i++) expect((await search(gw.url, key, { query: `no receivers ${i}` })).status).toBe(200);
      expect((await search(gw.url, key, { query: "no receivers refused" })).status).toBe(402);
      const day = new Date().toISOString().slice(0, 10);
      const expected = [
        `budget.exhausted:acme:daily:${day}`,
        `budget.threshold:acme:daily:${day}:100`,
        `budget.threshold:acme:daily:${day}:50`,
        `budget.threshold:acme:daily:${day}:80`,
      ];
      let alerts: any[] = [];
      for (let t0 = Date.now(); alerts.length < expected.length && Date.now() - t0 < 10_000; ) {
        alerts = await audit();
        if (alerts.length < expected.length) await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 300)); // a duplicate would show up now
      alerts = await audit();
      expect(alerts.map((e) => e.after.id).sort()).toEqual(expected);
      const t50 = alerts.find((e) => e.after.threshold === 50);
      expect(t50).toMatchObject({ actor: "system", action: "alert.budget.threshold", target: "tenant:acme" });
      expect(t50.after).toMatchObject({ window: "daily", period: day, limit: "0.02", receivers: 0 });
    } finally {
      await gw.close();
    }
  }, 60_000);

  it("a draining gateway waits for a webhook delivery in flight, its retry and slow answer included, before it closes", async () => {
    // The receiver refuses the first attempt (503) and holds every answer 400 ms: the delivery is still being retried
    // when the request that crossed the threshold has long been answered and the drain begins.
    const receiver = await startWebhookReceiver({ failFirst: 1, delayMs: 400 });
    const logs: string[] = [];
    const { gw, key } = await oneGateway("0.01", { ...LOOPBACK, webhooks: [receiver.url], initialBackoffMs: 300 }, logs);
    try {
      expect((await search(gw.url, key, { query: "drain during delivery" })).status).toBe(200);
      const report = await gw.drain(10);
      const drainedAt = Date.now();
      expect(report.cut).toBe(0);
      const day = new Date().toISOString().slice(0, 10);
      const accepted = receiver.accepted();
      expect(accepted.map((d) => d.id)).toEqual([`budget.threshold:acme:daily:${day}:50`]);
      expect(receiver.deliveries.map((d) => d.status)).toEqual([503, 200]);
      expect(accepted[0]!.answeredAt).toBeLessThanOrEqual(drainedAt);
      expect(logs.some((l) => l.includes("alert webhook not delivered"))).toBe(false);
      expect(logs.some((l) => l.includes("background work unfinished"))).toBe(false);
      // Its audit record was written beside the request too (memory state outlives the close).
      const recorded = await gw.gateway.stores.audit.list({ limit: 100 });
      expect(recorded.filter((e) => e.action === "alert.budget.threshold").map((e) => (e.after as any).receivers)).toEqual([1]);
    } finally {
      await gw.close();
      await receiver.close();
    }
  }, 60_000);
});
