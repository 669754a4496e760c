// Credit spend for the route table's metered rows, on the one ledger (src/payments/spend.ts): a reservation against
// the tenant's budget windows (and a keyless token's cap), later committed (possibly for less) or released.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../tenants.js";
import {
  attachSpend,
  extendSpend,
  releaseSpend as release,
  reserveSpend as reserve,
  type SpendRef,
  settleSpend as settle,
} from "../payments/spend.js";
import type { LedgerEntry } from "../state/types.js";

/** A credit reservation: its ledger ids (the tenant's entry and a capped token's), its tenant and amount. */
export interface SpendHold extends SpendRef {
  amount: bigint;
}

export interface CreditReservation {
  tenant: Tenant;
  cap?: { id: string; amount: bigint };
  route: string;
  amount: bigint;
  meter: string;
  /** Epoch ms after which an unsettled reservation is committed in full (the resource ran to its maximum). */
  validBefore: number;
}

export async function reserveSpend(services: GatewayServices, c: Context<GatewayEnv>, r: CreditReservation): Promise<SpendHold> {
  const hold = await reserve(services, {
    tenant: r.tenant,
    cap: r.cap,
    entry: {
      kind: "credits",
      route: r.route,
      fingerprint: c.get("requestId"),
      amount: r.amount.toString(),
      meter: r.meter,
      validBefore: Math.floor(r.validBefore / 1000),
    },
    context: c,
  });
  return { ids: hold.ids, tenant: hold.entry.tenant, amount: r.amount };
}

/** Commits a hold (for `finalAmount` when given); `c`, the request settling it, keeps the budget alerts alive. */
export async function settleSpend(
  services: GatewayServices,
  c: Context<GatewayEnv> | undefined,
  hold: SpendHold,
  finalAmount?: bigint,
): Promise<void> {
  await settle(services, hold, { finalAmount, context: c });
}

export async function releaseSpend(services: GatewayServices, hold: SpendHold, reason: string): Promise<void> {
  await release(services, hold, reason);
}

/** Names the resource a hold pays for, so the ledger (and an operator) can see what is running on it. */
export async function attachResource(services: GatewayServices, hold: SpendHold, resource: string): Promise<void> {
  await attachSpend(services, hold, { resource });
}

/**
 * Grows a running resource's hold by `amount` (atomic units) for `minutes` more, or gives such a growth back (negative
 * figures). Undefined when the hold is no longer open. @throws GatewayError 402 budget_exceeded, 503 state_unavailable.
 */
export async function growHold(
  services: GatewayServices,
  hold: SpendHold,
  g: { tenant: Tenant; amount: bigint; minutes: number; context?: Context },
): Promise<LedgerEntry | undefined> {
  return extendSpend(services, hold, { tenant: g.tenant, amount: g.amount, seconds: g.minutes * 60, context: g.context });
}
