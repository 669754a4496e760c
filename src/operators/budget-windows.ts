// Which occurrence of a budget window an instant falls in, and how long a once-per-window marker must live.
import type { BudgetWindow } from "../state/types.js";
import { dayOf, monthOf, resetAt } from "../state/windows.js";

/** "2026-11-23" for daily, "2026-11" for monthly, "all" for the total window (it never resets). */
export function windowPeriod(window: BudgetWindow, now: number): string {
  return window === "daily" ? dayOf(now) : window === "monthly" ? monthOf(now) : "all";
}

/** Until the window resets, plus a day of slack for clock skew between instances; the total window: a year. */
export function untilWindowEndsMs(window: BudgetWindow, now: number): number {
  const reset = resetAt(window, now);
  return reset ? Date.parse(reset) - now + 86_400_000 : 366 * 86_400_000;
}
