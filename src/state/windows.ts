// UTC budget windows: which day and month an instant belongs to, and when each window resets.
import type { BudgetLimits, BudgetWindow, LedgerEntry, SettlementFields, SpendKind, Usage, WindowAmounts } from "./types.js";

/** The UTC day last asked about ([from, to) in epoch ms): every request of a day asks about the same one. */
let lastDay = { from: 0, to: 0, day: "", month: "" };

function windowOf(now: number): { day: string; month: string } {
  if (now >= lastDay.from && now < lastDay.to) return lastDay;
  const iso = new Date(now).toISOString();
  const from = Date.UTC(Number(iso.slice(0, 4)), Number(iso.slice(5, 7)) - 1, Number(iso.slice(8, 10)));
  // Only ordinary dates are remembered (Date.UTC reads years 0–99 as 19xx; past 9999 the ISO form is longer).
  if (now >= 0 && iso.length === 24) lastDay = { from, to: from + 86_400_000, day: iso.slice(0, 10), month: iso.slice(0, 7) };
  return { day: iso.slice(0, 10), month: iso.slice(0, 7) };
}

export function dayOf(now: number): string {
  return windowOf(now).day;
}

export function monthOf(now: number): string {
  return windowOf(now).month;
}

export function resetAt(window: BudgetWindow, now: number): string | null {
  const d = new Date(now);
  if (window === "daily") return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).toISOString();
  if (window === "monthly") return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString();
  return null;
}

/** The first window the extra amount would overflow, if any. */
export function firstExceeded(usage: WindowAmounts, amount: bigint, limits: BudgetLimits): BudgetWindow | undefined {
  for (const w of ["daily", "monthly", "total"] as const) {
    const limit = limits[w];
    if (limit !== undefined && usage[w] + amount > limit) return w;
  }
  return undefined;
}

/** Counter keys for a tenant's usage in each window. */
export function windowKeys(tenant: string, day: string, month: string) {
  return { daily: `budget:${tenant}:d:${day}`, monthly: `budget:${tenant}:m:${month}`, total: `budget:${tenant}:t` };
}

/**
 * Counter keys for the credits part of a tenant's usage. The windowKeys counters hold both kinds (what budgets check);
 * the x402 part is their difference, so entries written before kinds existed need no migration.
 */
export function creditKeys(tenant: string, day: string, month: string) {
  return { daily: `credits:${tenant}:d:${day}`, monthly: `credits:${tenant}:m:${month}`, total: `credits:${tenant}:t` };
}

/** An entry's kind; entries stored before kinds existed are x402. */
export function kindOf(e: { kind?: SpendKind | string }): SpendKind {
  return e.kind === "credits" ? "credits" : "x402";
}

/** The Usage of a tenant from its summed counters and its credits counters. */
export function usageOf(sum: WindowAmounts, credits: WindowAmounts): Usage {
  const x402 = { daily: sum.daily - credits.daily, monthly: sum.monthly - credits.monthly, total: sum.total - credits.total };
  return { daily: sum.daily, monthly: sum.monthly, total: sum.total, byKind: { x402, credits: { ...credits } } };
}

/**
 * What a commit counts: the final amount when given; for x402 never more than the reservation, for credits whole.
 * @throws RangeError for a negative final amount.
 */
export function settledAmount(e: Pick<LedgerEntry, "amount" | "kind">, finalAmount: bigint | undefined): bigint {
  const reserved = BigInt(e.amount);
  if (finalAmount === undefined) return reserved;
  if (finalAmount < 0n) throw new RangeError(`final amount must not be negative, got ${finalAmount}`);
  return finalAmount < reserved || kindOf(e) === "credits" ? finalAmount : reserved;
}

/** Only the settlement fields a caller gave (undefined ones dropped). */
export function settlementPatch(f: SettlementFields | undefined): SettlementFields {
  const out: SettlementFields = {};
  if (f?.settledFrom) out.settledFrom = f.settledFrom;
  if (f?.costAmount !== undefined) out.costAmount = f.costAmount;
  if (f?.estimatedAmount !== undefined) out.estimatedAmount = f.estimatedAmount;
  if (f?.refusedReport) out.refusedReport = f.refusedReport;
  return out;
}

/** States whose amount counts as spent. */
export const COUNTED = new Set(["reserved", "uncertain", "committed"]);
