// Budget windows: which occurrence of a window an instant falls in, when it resets, and how long a once-per-window
// marker must live. The UTC day and month themselves come from src/state/windows.ts (the stores count by them).
import type { BudgetWindow } from "../../state/types.js";
import { dayOf, monthOf, resetAt } from "../../state/windows.js";

/** Every budget window, shortest first. */
export const WINDOWS: readonly BudgetWindow[] = ["daily", "monthly", "total"];

/** When the window that `now` falls in resets (ISO), or null for the total window (it never resets). */
export function windowResetAt(window: BudgetWindow, now: number): string | null {
  return resetAt(window, now);
}

/** "2026-11-23" for daily, "2026-11" for monthly, "all" for the total window (it never resets). */
export function windowPeriod(window: BudgetWindow, now: number): string {
  return window === "daily" ? dayOf(now) : window === "monthly" ? monthOf(now) : "all";
}

/** Until the window resets, plus a day of slack for clock skew between instances; the total window: a year. */
export function untilWindowEndsMs(window: BudgetWindow, now: number): number {
  const reset = resetAt(window, now);
  return reset ? Date.parse(reset) - now + 86_400_000 : 366 * 86_400_000;
}
