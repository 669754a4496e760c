// The budget room (src/payments/budgets/) on the memory stores: window boundaries (UTC day and month, the total window
// that never resets), what is left of a limit, the thresholds reached, and exhaustion (the 402, the once-per-window
// mark, the "stop" refusal until the window resets); tenants' amounts parsed once (src/payments/amounts.ts); and the money
// events port: what payments announces, a recording listener hears, once each across two "instances".
import { describe, expect, it } from "vitest";
import { configAmounts, tenantAmounts } from "../../src/payments/amounts.js";
import { type PaymentsMemory, paymentsMemory } from "../../src/payments/memory.js";
import { parseConfig } from "../../config/load.js";
import { TenantDirectory } from "../../src/identity/tenants.js";
import { GatewayError } from "../../src/errors.js";
import { Logger, Redactor } from "../../src/log.js";
import { announceExhausted, type BudgetServices, exhaustedWindow } from "../../src/payments/budgets/exhaustion.js";
import { isBudgeted, limitsOf } from "../../src/payments/budgets/limits.js";
import { budgetRemaining, leastRemaining, remainingOf, tenantWindows, windowFigures } from "../../src/payments/budgets/remaining.js";
import { checkBudget, reachedThresholds } from "../../src/payments/budgets/thresholds.js";
import { untilWindowEndsMs, windowPeriod, windowResetAt } from "../../src/payments/budgets/windows.js";
import type { MoneyEvent, MoneyEvents } from "../../src/payments/events.js";
import { reserveSpend, settleSpend } from "../../src/payments/spend.js";
import { withMultiplier } from "../../src/payments/credit-reports.js";
import { memoryStores } from "../../src/state/memory.js";
import type { StateStores, Usage } from "../../src/state/types.js";

const HASH = (n: number) => `sha256:${String(n).padStart(64, "0")}`;

function config() {
  return parseConfig({
    upstream: { baseUrl: "http://127.0.0.1:9" },
    tenants: [
      { id: "acme", keys: [{ hash: HASH(1) }], budget: { daily: "1.00", monthly: "5.00", total: "20.00" } },
      { id: "halt", keys: [{ hash: HASH(2) }], budget: { daily: "0.10" }, onExhausted: "stop" },
      { id: "free", keys: [{ hash: HASH(3) }], creditMultiplier: "1.000" },
    ],
  });
}

interface Heard {
  tenant: string;
  event: MoneyEvent;
}

/** Budget services as createGateway builds them, on shared `stores`, with a listener that records what it hears. */
function services(stores: StateStores, now: () => number, heard: Heard[]) {
  const cfg = config();
  const pending: Promise<unknown>[] = [];
  const moneyEvents: MoneyEvents = { announce: (tenant, event) => void heard.push({ tenant: tenant.id, event }) };
  const s: BudgetServices & { metrics: any; payments: PaymentsMemory } = {
    config: cfg,
    payments: paymentsMemory(cfg),
    directory: new TenantDirectory(cfg.tenants, now),
    stores,
    now,
    logger: new Logger(() => {}, "silent", new Redactor(), now),
    background: (_c, work) => void pending.push(work),
    instanceId: crypto.randomUUID(),
    moneyEvents,
    metrics: {},
  };
  return { s, settled: () => Promise.all(pending.splice(0)) };
}

const usage = (daily: bigint, monthly: bigint, total: bigint): Usage => ({
  daily,
  monthly,
  total,
  byKind: { x402: { daily, monthly, total }, credits: { daily: 0n, monthly: 0n, total: 0n } },
});

const entry = (amount: bigint) => ({ route: "search", fingerprint: "f", amount: amount.toString() });

describe("the budget room", () => {
  it("parses a tenant's amounts once, into atomic units", () => {
    const cfg = config();
    const acme = cfg.tenants[0]!;
    expect(tenantAmounts(acme)).toBe(tenantAmounts(acme)); // the same object: parsed at load, read after
    expect(limitsOf(acme)).toEqual({ daily: 1_000_000n, monthly: 5_000_000n, total: 20_000_000n });
    expect(isBudgeted(acme)).toBe(true);
    expect(isBudgeted(cfg.tenants[2]!)).toBe(false);
    expect(tenantAmounts(cfg.tenants[2]!).creditMultiplier).toBeUndefined(); // exactly 1 is none
    expect(withMultiplier(1_000n, tenantAmounts({ creditMultiplier: "1.25" }).creditMultiplier)).toBe(1_250n);
    expect(withMultiplier(1_000n, tenantAmounts({ creditMultiplier: "0" }).creditMultiplier)).toBe(0n); // free, not unchanged
    // A changed tenant is a new object: its amounts are its own.
    const raised = { ...acme, budget: { daily: "2.5" } };
    expect(limitsOf(raised)).toEqual({ daily: 2_500_000n, monthly: undefined, total: undefined });
    expect(limitsOf(acme).daily).toBe(1_000_000n);
    expect(configAmounts(cfg).creditPrices.webSearch).toBe(5_000n);
  });

  it("places an instant in its window: UTC day and month boundaries, the total window never resets", () => {
    const lastMs = Date.parse("2026-01-31T23:59:59.999Z");
    const next = lastMs + 1;
    expect(windowPeriod("daily", lastMs)).toBe("2026-01-31");
    expect(windowPeriod("daily", next)).toBe("2026-02-01");
    expect(windowPeriod("monthly", lastMs)).toBe("2026-01");
    expect(windowPeriod("monthly", next)).toBe("2026-02");
    expect(windowPeriod("total", lastMs)).toBe("all");
    expect(windowResetAt("daily", lastMs)).toBe("2026-02-01T00:00:00.000Z");
    expect(windowResetAt("monthly", Date.parse("2026-12-15T12:00:00Z"))).toBe("2027-01-01T00:00:00.000Z");
    expect(windowResetAt("total", lastMs)).toBeNull();
    // A marker lives until the window resets, plus a day of slack; the total window's a year.
    expect(untilWindowEndsMs("daily", lastMs)).toBe(1 + 86_400_000);
    expect(untilWindowEndsMs("total", lastMs)).toBe(366 * 86_400_000);
  });

  it("says what is left: never below 0, the least over the limited windows", () => {
    expect(remainingOf(1_000n, 400n)).toBe(600n);
    expect(remainingOf(1_000n, 1_000n)).toBe(0n);
    expect(remainingOf(1_000n, 1_500n)).toBe(0n); // a credits settlement may end past the limit
    const limits = { daily: 1_000n, total: 5_000n };
    expect(leastRemaining(limits, usage(300n, 300n, 4_500n))).toBe(500n);
    expect(leastRemaining(limits, usage(1_200n, 1_200n, 1_200n))).toBe(0n);
    expect(leastRemaining({}, usage(1n, 1n, 1n))).toBeUndefined();
    const w = windowFigures(limits, usage(300n, 300n, 4_500n), Date.parse("2026-03-03T10:00:00Z"));
    expect(w.map((x) => [x.window, x.limit, x.remaining, x.resetsAt])).toEqual([
      ["daily", 1_000n, 700n, "2026-03-04T00:00:00.000Z"],
      ["monthly", undefined, undefined, "2026-04-01T00:00:00.000Z"],
      ["total", 5_000n, 500n, null],
    ]);
  });

  it("reads the remaining budget from the ledger, and none for a tenant without a budget", async () => {
    const now = () => Date.parse("2026-03-03T10:00:00Z");
    const { s } = services(memoryStores(now), now, []);
    const acme = s.directory.get("acme")!;
    expect(budgetRemaining(s, s.directory.get("free")!)).toBe("unlimited"); // at once: no ledger read
    expect(await budgetRemaining(s, acme)).toBe("1.00");
    await settleSpend(s as any, await reserveSpend(s as any, { tenant: acme, entry: entry(250_000n) }));
    expect(await budgetRemaining(s, acme)).toBe("0.75");
    const [daily] = await tenantWindows(s, acme);
    expect(daily).toMatchObject({ window: "daily", spent: 250_000n, remaining: 750_000n });
  });

  it("lists the thresholds reached, exactly at the boundary", () => {
    expect(reachedThresholds(499_999n, 1_000_000n, [50, 80, 100])).toEqual([]);
    expect(reachedThresholds(500_000n, 1_000_000n, [50, 80, 100])).toEqual([50]);
    expect(reachedThresholds(1_000_000n, 1_000_000n, [50, 80, 100])).toEqual([50, 80, 100]);
    expect(reachedThresholds(5n, 0n, [50])).toEqual([]);
  });

  it("refuses a call the window cannot take (402) and announces the exhaustion once per window", async () => {
    let t = Date.parse("2026-03-03T10:00:00Z");
    const now = () => t;
    const heard: Heard[] = [];
    const { s, settled } = services(memoryStores(now), now, heard);
    const acme = s.directory.get("acme")!;
    await settleSpend(s as any, await reserveSpend(s as any, { tenant: acme, entry: entry(900_000n) }));
    await settled();
    const err = await reserveSpend(s as any, { tenant: acme, entry: entry(200_000n) }).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 402, code: "budget_exceeded" });
    await settled();
    const exhausted = heard.filter((h) => h.event.type === "budget.exhausted");
    expect(exhausted).toEqual([
      { tenant: "acme", event: { type: "budget.exhausted", window: "daily", period: "2026-03-03", onExhausted: "block" } },
    ]);
    // Refused again the same day: already announced.
    await reserveSpend(s as any, { tenant: acme, entry: entry(200_000n) }).catch(() => {});
    await settled();
    expect(heard.filter((h) => h.event.type === "budget.exhausted")).toHaveLength(1);
    // A "block" tenant may spend again once the day resets.
    t = Date.parse("2026-03-04T00:00:00Z");
    await reserveSpend(s as any, { tenant: acme, entry: entry(200_000n) });
  });

  it('keeps a "stop" tenant refused until the window resets, even with budget given back', async () => {
    let t = Date.parse("2026-03-03T23:00:00Z");
    const now = () => t;
    const heard: Heard[] = [];
    const { s, settled } = services(memoryStores(now), now, heard);
    const halt = s.directory.get("halt")!;
    const hold = await reserveSpend(s as any, { tenant: halt, entry: entry(100_000n) });
    await reserveSpend(s as any, { tenant: halt, entry: entry(1n) }).catch(() => {});
    await settled();
    expect(heard.map((h) => h.event)).toEqual([{ type: "budget.exhausted", window: "daily", period: "2026-03-03", onExhausted: "stop" }]);
    expect(await exhaustedWindow(s, halt, t)).toBe("daily");
    await settleSpend(s as any, hold, { finalAmount: 0n }); // the whole hold given back
    await settled();
    const err = await reserveSpend(s as any, { tenant: halt, entry: entry(1n) }).catch((e) => e);
    expect(err).toMatchObject({ status: 402, code: "budget_exceeded", details: { window: "daily", stopped: true } });
    t = Date.parse("2026-03-04T00:00:00Z"); // the next day: a fresh window, no mark
    expect(await exhaustedWindow(s, halt, t)).toBeUndefined();
    await reserveSpend(s as any, { tenant: halt, entry: entry(1n) });
  });

  it("announces each threshold once per window across instances sharing the state", async () => {
    const now = () => Date.parse("2026-03-03T10:00:00Z");
    const stores = memoryStores(now);
    const heard: Heard[] = [];
    const a = services(stores, now, heard);
    const b = services(stores, now, heard);
    const acme = a.s.directory.get("acme")!;
    await settleSpend(a.s as any, await reserveSpend(a.s as any, { tenant: acme, entry: entry(850_000n) }));
    await a.settled();
    await Promise.all([checkBudget(a.s, "acme"), checkBudget(b.s, "acme")]);
    const thresholds = heard.filter((h) => h.event.type === "budget.threshold").map((h) => h.event);
    expect(thresholds).toEqual([
      { type: "budget.threshold", window: "daily", period: "2026-03-03", threshold: 50, spent: "0.85", limit: "1.00" },
      { type: "budget.threshold", window: "daily", period: "2026-03-03", threshold: 80, spent: "0.85", limit: "1.00" },
    ]);
    // Reaching the limit announces 100 % and the exhaustion, once.
    await settleSpend(a.s as any, await reserveSpend(a.s as any, { tenant: acme, entry: entry(150_000n) }));
    await a.settled();
    await checkBudget(b.s, "acme");
    expect(heard.map((h) => h.event.type).slice(2)).toEqual(["budget.threshold", "budget.exhausted"]);
    await announceExhausted(b.s, "acme", "daily");
    expect(heard.filter((h) => h.event.type === "budget.exhausted")).toHaveLength(1);
  });

  it("announces nothing and breaks nothing without a listener", async () => {
    const now = () => Date.parse("2026-03-03T10:00:00Z");
    const { s, settled } = services(memoryStores(now), now, []);
    s.moneyEvents = undefined;
    const acme = s.directory.get("acme")!;
    await settleSpend(s as any, await reserveSpend(s as any, { tenant: acme, entry: entry(1_000_000n) }));
    await settled();
    await expect(reserveSpend(s as any, { tenant: acme, entry: entry(1n) })).rejects.toMatchObject({ code: "budget_exceeded" });
  });
});
