// Credit spend for the route table's metered rows, on the one ledger (src/payments/spend.ts): a reservation against
// the tenant's budget windows (and a keyless token's cap), later committed (possibly for less) or released.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { Tenant } from "../identity/tenants.js";
import {
  attachSpend,
  extendSpend,
  releaseSpend as release,
  reserveSpend as reserve,
  type LedgerServices,
  type SpendCap,
  type SpendRef,
  settleSpend as settle,
} from "./spend.js";
import type { LedgerEntry, SettledFrom } from "../state/types.js";
import { tenantAmounts } from "./amounts.js";
import { afterCreditSettlement, alertRefusedReport, multiplierOf, withMultiplier } from "./credit-reports.js";
import type { RefusedReport } from "./report-screen.js";

/**
 * A credit reservation: its ledger ids (the tenant's entry and a capped token's), its tenant, its amount at cost (the
 * ledger's is `amount` × the tenant's multiplier), its route row and the multiplier in force when it was made.
 */
export interface CreditHold extends SpendRef {
  amount: bigint;
  route?: string;
  multiplier?: string;
}

/** What a settlement came to, at cost (before the tenant's multiplier), and where the figure came from. */
export interface CreditReport {
  cost: bigint;
  from: SettledFrom;
  /** What the price table says the same work costs (default: the cost). */
  estimate?: bigint;
  /** The upstream's own figure was refused (./report-screen.ts): `cost` is the estimate, the entry is flagged. */
  refused?: RefusedReport;
}

export interface CreditReservation {
  tenant: Tenant;
  cap?: SpendCap;
  route: string;
  amount: bigint;
  meter: string;
  /** Epoch ms after which an unsettled reservation is committed in full (the resource ran to its maximum). */
  validBefore: number;
}

/** Reserves `r.amount` (at cost) × the tenant's multiplier against its budget. */
export async function reserveCredits(services: LedgerServices, c: Context<GatewayEnv>, r: CreditReservation): Promise<CreditHold> {
  const multiplier = multiplierOf(r.tenant);
  const hold = await reserve(services, {
    tenant: r.tenant,
    cap: r.cap,
    entry: {
      kind: "credits",
      route: r.route,
      fingerprint: c.get("requestId"),
      amount: withMultiplier(r.amount, tenantAmounts(r.tenant).creditMultiplier).toString(),
      meter: r.meter,
      validBefore: Math.floor(r.validBefore / 1000),
      ...(multiplier ? { multiplier } : {}),
    },
    context: c,
  });
  return { ids: hold.ids, tenant: hold.entry.tenant, amount: r.amount, route: r.route, ...(multiplier ? { multiplier } : {}) };
}

/**
 * Commits a hold: at `report.cost` × the tenant's multiplier when given (recorded whole, above the hold too), else at
 * what was reserved (an estimate). `c`, the request settling it, keeps the budget alerts alive.
 */
export async function settleCredits(
  services: LedgerServices,
  c: Context<GatewayEnv> | undefined,
  hold: CreditHold,
  report?: CreditReport,
): Promise<void> {
  const entryId = hold.ids[0]!;
  // A reported figure settles a hold kept past its call (a job, a resource), which the reconciler may have committed
  // at expiry or another instance got to first: then there is nothing to add. A per-call hold is this request's own.
  const kept = report !== undefined;
  if (kept && (await services.stores.ledger.get(entryId))?.state === "committed") return;
  const cost = report?.cost ?? hold.amount;
  const charged = report ? withMultiplier(cost, hold.multiplier) : undefined;
  const fields = {
    settledFrom: report?.from ?? "estimate",
    costAmount: cost.toString(),
    estimatedAmount: (report?.estimate ?? cost).toString(),
    ...(report?.refused ? { refusedReport: report.refused.reason } : {}),
  } as const;
  await settle(services, hold, { finalAmount: charged, context: c, fields });
  const recorded = charged ?? withMultiplier(hold.amount, hold.multiplier);
  const books = afterCreditSettlement(services, c, {
    entryId,
    tenant: hold.tenant,
    route: hold.route ?? "unknown",
    charged: recorded,
    cost,
    overHold: kept,
  });
  // A per-call settlement (the hot path) keeps its books beside the request; a reported one before it answers.
  if (kept) await books;
  else services.background(c, books, "credit settlement bookkeeping");
  if (report?.refused) await alertRefusedReport(services, entryId, report.refused, c);
}

/** What the ledger records when a hold is committed as it stands: its amount × the tenant's multiplier in force at reservation. */
export function chargeOf(hold: CreditHold): bigint {
  return withMultiplier(hold.amount, hold.multiplier);
}

export async function releaseCredits(services: LedgerServices, hold: CreditHold, reason: string): Promise<void> {
  await release(services, hold, reason);
}

/** Names the resource a hold pays for, so the ledger (and an operator) can see what is running on it. */
export async function attachResource(services: LedgerServices, hold: CreditHold, resource: string): Promise<void> {
  await attachSpend(services, hold, { resource });
}

/**
 * Grows a running resource's hold by `amount` (atomic units) for `minutes` more, or gives such a growth back (negative
 * figures). Undefined when the hold is no longer open. @throws GatewayError 402 budget_exceeded, 503 state_unavailable.
 */
export async function growHold(
  services: LedgerServices,
  hold: CreditHold,
  g: { tenant: Tenant; amount: bigint; minutes: number; context?: Context },
): Promise<LedgerEntry | undefined> {
  const amount = g.amount < 0n ? -withMultiplier(-g.amount, hold.multiplier) : withMultiplier(g.amount, hold.multiplier);
  return extendSpend(services, hold, { tenant: g.tenant, amount, seconds: g.minutes * 60, context: g.context });
}
