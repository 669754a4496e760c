// /_tollgate/metrics against the real emulator and local chain: it parses as Prometheus text, only operators may read
// it, and its payment counters, budgets and held amounts equal what the ledger says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { search, startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";
import { startStallingProxy } from "../helpers/stalling-proxy.js";
import { histogram, promtoolCheck, sampleSum, scrape } from "./prometheus.js";
import { VERSION } from "../../src/operators/version.js";
import { startNodeGateway } from "../../src/host/node.js";
import { startRedisServer } from "../state/redis-server.js";

const METRICS_TOKEN = "metrics-" + "m".repeat(32);
const usd = (atomic: bigint) => Number(atomic) / 1e6;

async function adminLedger(url: string, adminKey: string) {
  const r = await fetch(`${url}/_tollgate/admin/ledger?limit=1000`, { headers: { "x-api-key": adminKey } });
  return (await r.json()).entries as Array<{ tenant: string; state: string; amount: string }>;
}

function ledgerTotals(entries: Array<{ tenant: string; state: string; amount: string }>, tenant: string, state: string) {
  const mine = entries.filter((e) => e.tenant === tenant && e.state === state);
  return { count: mine.length, usd: usd(mine.reduce((a, e) => a + BigInt(e.amount), 0n)) };
}

describe("/_tollgate/metrics (emulator + local chain)", () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulatorWithChain();
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("answers only an admin key or the metrics token, with the Prometheus content type", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme" }, { id: "ops", scopes: ["admin"] }], { secrets: { metricsToken: METRICS_TOKEN } });
    try {
      const get = (headers: Record<string, string>) => fetch(`${s.gateway.url}/_tollgate/metrics`, { headers });
      const none = await get({});
      expect(none.status).toBe(401);
      expect((await none.json()).code).toBe("unauthorized");
      const tenant = await get({ "x-api-key": s.keys.acme });
      expect(tenant.status).toBe(403);
      const wrong = await get({ authorization: "Bearer not-the-metrics-token-at-all" });
      expect(wrong.status).toBe(401);
      for (const headers of [{ authorization: `Bearer ${METRICS_TOKEN}` }, { "x-api-key": s.keys.ops }] as Array<Record<string, string>>) {
        const ok = await get(headers);
        expect(ok.status).toBe(200);
        expect(ok.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
        expect(await ok.text()).toContain("# TYPE tollgate_requests_total counter");
      }
      // The token is a secret: it never reaches the log.
      expect(s.logs.join("\n")).not.toContain(METRICS_TOKEN);
    } finally {
      await s.close();
    }
  });

  it("counts paid searches, cache hits and refusals exactly as the ledger and /usage record them", async () => {
    const s = await startPaidGateway(
      emu,
      [
        { id: "acme", budget: { daily: "1.00" } },
        { id: "beta", budget: { total: "0.01" } },
        { id: "ops", scopes: ["admin"] },
      ],
      { secrets: { metricsToken: METRICS_TOKEN } },
    );
    try {
      const url = s.gateway.url;
      const statuses: Record<string, number[]> = { acme: [], beta: [] };
      for (const q of ["metrics one", "metrics two", "metrics three"])
        statuses.acme.push((await search(url, s.keys.acme, { query: q })).status);
      // Repeats: served from the cache, nothing paid.
      for (let i = 0; i < 2; i++) statuses.acme.push((await search(url, s.keys.acme, { query: "metrics one" })).status);
      // beta's total budget covers two searches; the third is refused before anything is signed.
      for (const q of ["beta one", "beta two", "beta three"]) statuses.beta.push((await search(url, s.keys.beta, { query: q })).status);
      expect(statuses.acme).toEqual([200, 200, 200, 200, 200]);
      expect(statuses.beta).toEqual([200, 200, 402]);

      const { text, families } = await scrape(url, { authorization: `Bearer ${METRICS_TOKEN}` });
      expect(text.length).toBeGreaterThan(0);
      const ledger = await adminLedger(url, s.keys.ops);

      for (const tenant of ["acme", "beta"]) {
        const committed = ledgerTotals(ledger, tenant, "committed");
        expect(committed.count).toBe(tenant === "acme" ? 3 : 2);
        expect(sampleSum(families, "tollgate_payments_total", { tenant, state: "committed" })).toBe(committed.count);
        expect(sampleSum(families, "tollgate_payments_usd_total", { tenant, state: "committed" })).toBeCloseTo(committed.usd, 9);
        // Every entry the ledger holds was reserved once, and none is released or held here.
        expect(sampleSum(families, "tollgate_payments_total", { tenant, state: "reserved" })).toBe(
          ledger.filter((e) => e.tenant === tenant).length,
        );
        expect(sampleSum(families, "tollgate_payments_total", { tenant, state: "released" })).toBe(
          ledgerTotals(ledger, tenant, "released").count,
        );
        expect(sampleSum(families, "tollgate_payments_held_usd", { tenant })).toBe(0);

        // Budget gauges equal what /_tollgate/usage answers the tenant.
        const usage = await (await fetch(`${url}/_tollgate/usage`, { headers: { "x-api-key": s.keys[tenant] } })).json();
        for (const window of ["daily", "monthly", "total"]) {
          expect(sampleSum(families, "tollgate_budget_spent_usd", { tenant, window })).toBeCloseTo(Number(usage[window].spent), 9);
          if (usage[window].remaining !== null) {
            expect(sampleSum(families, "tollgate_budget_remaining_usd", { tenant, window })).toBeCloseTo(
              Number(usage[window].remaining),
              9,
            );
          } else {
            expect(
              families
                .find((f) => f.name === "tollgate_budget_remaining_usd")!
                .metrics.some((m) => m.labels?.tenant === tenant && m.labels?.window === window),
            ).toBe(false);
          }
        }
      }
      expect(sampleSum(families, "tollgate_budget_remaining_usd", { tenant: "beta", window: "total" })).toBe(0);

      // Requests by route row, method, code and tenant; the 402 refusal names beta.
      expect(
        sampleSum(families, "tollgate_requests_total", { route: "x402.web.search", method: "POST", code: "200", tenant: "acme" }),
      ).toBe(5);
      expect(
        sampleSum(families, "tollgate_requests_total", { route: "x402.web.search", method: "POST", code: "402", tenant: "beta" }),
      ).toBe(1);
      expect(families.find((f) => f.name === "tollgate_requests_total")!.metrics.some((m) => m.labels?.status !== undefined)).toBe(false);
      expect(sampleSum(families, "tollgate_refusals_total", { reason: "budget_exceeded" })).toBe(1);
      expect(families.find((f) => f.name === "tollgate_build_info")!.metrics[0]!.labels).toMatchObject({
        version: VERSION,
        runtime: "node",
      });
      // Cache: 5 misses (3 acme + 2 beta paid; the refused one never reached the cache), 2 hits, each saving one price.
      expect(sampleSum(families, "tollgate_cache_requests_total", { outcome: "hit" })).toBe(2);
      expect(sampleSum(families, "tollgate_cache_requests_total", { outcome: "miss" })).toBe(5);
      const price = usd(BigInt(ledger.find((e) => e.tenant === "acme")!.amount));
      expect(sampleSum(families, "tollgate_cache_saved_usd_total")).toBeCloseTo(2 * price, 9);
      // Latency: one gateway observation per request, and each paid miss asked the upstream twice (402, then paid).
      // Histograms by route class only (x402.web.search is in "search"): a bounded set of series.
      const gatewaySeries = histogram(text, "tollgate_request_duration_seconds", { class: "search" });
      expect(gatewaySeries[0]!.count).toBe(8);
      expect(text).not.toMatch(/tollgate_(request|upstream)_duration_seconds_bucket\{route=/);
      const upstreamSeries = histogram(text, "tollgate_upstream_duration_seconds", { class: "search" });
      expect(upstreamSeries[0]!.count).toBeGreaterThanOrEqual(10);
      expect(upstreamSeries[0]!.sum).toBeGreaterThan(0);
      expect(sampleSum(families, "tollgate_state_up")).toBe(1);
      expect(sampleSum(families, "tollgate_state_errors_total")).toBe(0);
      // Node's own process metrics come with prom-client.
      expect(families.some((f) => f.name === "process_cpu_user_seconds_total")).toBe(true);
      // Label values are route rows, never raw paths or query strings.
      expect(text).not.toMatch(/route="[^"]*\?/);
      // The exposition passes Prometheus's own linter.
      const lint = promtoolCheck(text);
      if (lint.skipped) console.warn(`promtool check metrics skipped: ${lint.skipped}`);
      else expect(lint.problems).toEqual([]);
    } finally {
      await s.close();
    }
  }, 120_000);

  it("shows a payment whose outcome is unknown as held, then as committed once the chain settles it", async () => {
    const proxy = await startStallingProxy(emu.controlUrl, "forward-then-stall");
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }], {
      upstreamUrl: proxy.url,
      timeoutMs: 1500,
      payments: { maxAuthorizationSeconds: 12 },
      secrets: { metricsToken: METRICS_TOKEN },
    });
    try {
      const auth = { authorization: `Bearer ${METRICS_TOKEN}` };
      const r = await search(s.gateway.url, s.keys.acme, { query: "lost in the middle" });
      expect(r.status).toBe(504);
      const { held } = await r.json();
      let { families } = await scrape(s.gateway.url, auth);
      expect(sampleSum(families, "tollgate_payments_held_usd", { tenant: "acme" })).toBeCloseTo(Number(held), 9);
      expect(sampleSum(families, "tollgate_payments_held", { tenant: "acme" })).toBe(1);
      expect(sampleSum(families, "tollgate_payments_total", { tenant: "acme", state: "uncertain" })).toBe(1);
      expect(sampleSum(families, "tollgate_payments_total", { tenant: "acme", state: "committed" })).toBe(0);
      expect(sampleSum(families, "tollgate_requests_total", { code: "504", tenant: "acme" })).toBe(1);

      const [entry] = (await (await fetch(`${s.gateway.url}/_tollgate/ledger`, { headers: { "x-api-key": s.keys.acme } })).json()).entries;
      await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(entry.validBefore) + 5_500 - Date.now())));
      expect((await s.gateway.gateway.reconciler.runOnce()).committed).toBe(1);

      ({ families } = await scrape(s.gateway.url, auth));
      expect(sampleSum(families, "tollgate_payments_held_usd", { tenant: "acme" })).toBe(0);
      expect(sampleSum(families, "tollgate_payments_total", { tenant: "acme", state: "committed" })).toBe(1);
      expect(sampleSum(families, "tollgate_payments_usd_total", { tenant: "acme", state: "committed" })).toBeCloseTo(Number(held), 9);
    } finally {
      await s.close();
      await proxy.close();
    }
  }, 60_000);

  it("in a fleet on one Redis, the instances' payment counters add up to the shared ledger, and both report its budgets", async () => {
    const redis = await startRedisServer();
    const a = await startPaidGateway(
      emu,
      [
        { id: "acme", budget: { daily: "1.00" } },
        { id: "ops", scopes: ["admin"] },
      ],
      {
        state: { backend: "redis", redisUrl: redis.url },
        secrets: { metricsToken: METRICS_TOKEN },
      },
    );
    const b = await startNodeGateway({
      config: a.gateway.gateway.services.config,
      secrets: a.secrets,
      logSink: () => {},
    });
    try {
      const auth = { authorization: `Bearer ${METRICS_TOKEN}` };
      const urls = [a.gateway.url, b.url];
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => search(urls[i % 2]!, a.keys.acme, { query: `fleet metrics ${i}` })),
      );
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      const [fa, fb] = [(await scrape(a.gateway.url, auth)).families, (await scrape(b.url, auth)).families];
      const ledger = await adminLedger(a.gateway.url, a.keys.ops);
      const committed = ledgerTotals(ledger, "acme", "committed");
      expect(committed.count).toBe(6);
      const count = (f: typeof fa) => sampleSum(f, "tollgate_payments_total", { tenant: "acme", state: "committed" });
      expect(count(fa)).toBe(3);
      expect(count(fa) + count(fb)).toBe(committed.count);
      const amount = (f: typeof fa) => sampleSum(f, "tollgate_payments_usd_total", { tenant: "acme", state: "committed" });
      expect(amount(fa) + amount(fb)).toBeCloseTo(committed.usd, 9);
      for (const f of [fa, fb])
        expect(sampleSum(f, "tollgate_budget_remaining_usd", { tenant: "acme", window: "daily" })).toBeCloseTo(1 - committed.usd, 9);
    } finally {
      await b.close();
      await a.close();
      await redis.stop();
    }
  }, 60_000);
});
