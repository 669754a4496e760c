// UTC budget windows: which day and month an instant belongs to, and when each window resets.
import type { BudgetLimits, BudgetWindow, Usage } from "./types.js";

export function dayOf(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

export function monthOf(now: number): string {
  return new Date(now).toISOString().slice(0, 7);
}

export function resetAt(window: BudgetWindow, now: number): string | null {
  const d = new Date(now);
  if (window === "daily") return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).toISOString();
  if (window === "monthly") return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString();
  return null;
}

/** The first window the extra amount would overflow, if any. */
export function firstExceeded(usage: Usage, amount: bigint, limits: BudgetLimits): BudgetWindow | undefined {
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

/** States whose amount counts as spent. */
export const COUNTED = new Set(["reserved", "uncertain", "committed"]);
