// What a tenant has spent and may still spend in each budget window: the figures the usage API, the console, the
// metrics and a paid answer's `x-tollgate-budget-remaining` header show.
import type { Tenant } from "../../identity/tenants.js";
import type { BudgetLimits, BudgetWindow, StateStores, Usage } from "../../state/types.js";
import { atomicToUsd } from "../money.js";
import { isBudgeted, limitsOf } from "./limits.js";
import { WINDOWS, windowResetAt } from "./windows.js";
import type { PaymentsMemory, RememberedSpend } from "../memory.js";

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

/** A budget figure this instance read lately is shown without a read for this long… */
const REMAINING_FRESH_MS = 1000;
/** …and, older than that but not this old, shown while it is read again behind the answer. */
const REMAINING_STALE_MS = 30_000;

/** A tenant's spend per window as last read, and when (services.payments.remaining; limits are applied when shown). */
type Remembered = RememberedSpend;
/** What showing the remaining figure takes: the ledger, the clock, and what this gateway read lately. */
export type RemainingReader = LedgerReader & { payments: Pick<PaymentsMemory, "remaining"> };

const shown = (tenant: Tenant, used: Pick<Usage, BudgetWindow>) => {
  const rem = leastRemaining(limitsOf(tenant), used);
  return rem === undefined ? "unlimited" : atomicToUsd(rem);
};

/** What a tenant's answers show as remaining, read from the ledger now (and remembered for the next answers). */
function readRemaining(services: LedgerReader, tenant: Tenant, known: Map<string, Remembered>): Promise<string> {
  const at = services.now();
  return services.stores.ledger.usage(tenant.id, at).then((used) => {
    if (known.size >= 10_000) known.clear();
    known.set(tenant.id, { used: { daily: used.daily, monthly: used.monthly, total: used.total }, at });
    return shown(tenant, used);
  });
}

/**
 * What a tenant may still spend, as shown on paid answers (`x-tollgate-budget-remaining`): a string at once where the
 * tenant has no budget (nothing to subtract from), or where this instance read the figure within the last second (a
 * cache hit costs no state round trip); a figure up to 30 s old is shown while it is read again behind the answer
 * (`background`); otherwise the ledger's answer: `await` it either way. `justPaid`: what this request has just paid
 * (held in the ledger already), taken off a remembered figure so the payer sees it at once. The figure is what the
 * answer shows, never what a payment is checked against: reservations check the ledger itself, atomically.
 */
export function budgetRemaining(
  services: RemainingReader,
  tenant: Tenant,
  opts: { justPaid?: bigint; background?: (work: Promise<unknown>) => void } = {},
): string | Promise<string> {
  if (!isBudgeted(tenant)) return "unlimited";
  const known = services.payments.remaining;
  const seen = known.get(tenant.id);
  const now = services.now();
  const age = seen ? now - seen.at : Number.POSITIVE_INFINITY;
  if (seen && opts.background && age >= 0 && age < REMAINING_STALE_MS) {
    const paid = opts.justPaid ?? 0n;
    if (paid > 0n) for (const w of WINDOWS) seen.used[w] += paid;
    if ((age >= REMAINING_FRESH_MS || paid > 0n) && !seen.reading) {
      seen.reading = true;
      opts.background(readRemaining(services, tenant, known).finally(() => (seen.reading = false)));
    }
    return shown(tenant, seen.used);
  }
  return readRemaining(services, tenant, known);
}
