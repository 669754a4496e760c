// What a tenant has spent and may still spend in each budget window: the figures the usage API, the console, the
// metrics and a paid answer's `x-tollgate-budget-remaining` header show.
import type { Tenant } from "../../identity/tenants.js";
import type { BudgetLimits, BudgetWindow, StateStores, Usage } from "../../state/types.js";
import { atomicToUsd } from "../money.js";
import { isBudgeted, limitsOf } from "./limits.js";
import { WINDOWS, windowResetAt } from "./windows.js";

/** One window of a tenant: its limit (none: unlimited), what was spent (both kinds, and each apart), what is left. */
export interface WindowFigures {
  window: BudgetWindow;
  limit?: bigint;
  spent: bigint;
  x402: bigint;
  credits: bigint;
  /** limit − spent, never below 0; undefined without a limit. */
  remaining?: bigint;
  resetsAt: string | null;
}

/** What is left of `limit` after `spent`: never below 0 (a credits settlement may end past the limit). */
export function remainingOf(limit: bigint, spent: bigint): bigint {
  return limit > spent ? limit - spent : 0n;
}

/** Every window of a tenant from its usage at `now`. */
export function windowFigures(limits: Readonly<BudgetLimits>, used: Usage, now: number): WindowFigures[] {
  return WINDOWS.map((w) => {
    const limit = limits[w];
    return {
      window: w,
      limit,
      spent: used[w],
      x402: used.byKind.x402[w],
      credits: used.byKind.credits[w],
      remaining: limit === undefined ? undefined : remainingOf(limit, used[w]),
      resetsAt: windowResetAt(w, now),
    };
  });
}

/** The smallest remaining amount over the windows that have a limit; undefined when none has. */
export function leastRemaining(limits: Readonly<BudgetLimits>, used: Pick<Usage, BudgetWindow>): bigint | undefined {
  let rem: bigint | undefined;
  for (const w of WINDOWS) {
    const l = limits[w];
    if (l === undefined) continue;
    const left = l - used[w];
    if (rem === undefined || left < rem) rem = left;
  }
  return rem === undefined ? undefined : rem < 0n ? 0n : rem;
}

/** What reading a tenant's windows takes: the ledger and the clock. */
type LedgerReader = { stores: Pick<StateStores, "ledger">; now: () => number };

/** A tenant's windows, read from the ledger now. */
export async function tenantWindows(services: LedgerReader, tenant: Tenant): Promise<WindowFigures[]> {
  const now = services.now();
  return windowFigures(limitsOf(tenant), await services.stores.ledger.usage(tenant.id, now), now);
}

/**
 * The most the tenant's budget could pay for one thing now: the least of its daily and monthly limits and what remains
 * of its total budget (a total never resets), with the window that sets it; undefined for a tenant without a budget.
 * (A keyless token's cap is never above it.)
 */
export async function spendCeiling(services: LedgerReader, tenant: Tenant): Promise<{ limit: bigint; window: BudgetWindow } | undefined> {
  const limits = limitsOf(tenant);
  let ceiling: { limit: bigint; window: BudgetWindow } | undefined;
  for (const window of ["daily", "monthly"] as const) {
    const limit = limits[window];
    if (limit !== undefined && (!ceiling || limit < ceiling.limit)) ceiling = { limit, window };
  }
  if (limits.total !== undefined) {
    const left = remainingOf(limits.total, (await services.stores.ledger.usage(tenant.id, services.now())).total);
    if (!ceiling || left < ceiling.limit) ceiling = { limit: left, window: "total" };
  }
  return ceiling;
}

/**
 * What a tenant may still spend, as shown on paid answers: a string at once where the tenant has no budget (nothing
 * to subtract from, no ledger read: this runs on every cache hit), else the ledger's answer: `await` it either way.
 */
export function budgetRemaining(services: LedgerReader, tenant: Tenant): string | Promise<string> {
  if (!isBudgeted(tenant)) return "unlimited";
  return services.stores.ledger.usage(tenant.id, services.now()).then((used) => {
    const rem = leastRemaining(limitsOf(tenant), used);
    return rem === undefined ? "unlimited" : atomicToUsd(rem);
  });
}
