// Credit spend for the route table's metered rows, on the one ledger (src/payments/spend.ts): a reservation against
// the tenant's budget windows (and a keyless token's cap), later committed (possibly for less) or released.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../tenants.js";
import { releaseSpend as release, reserveSpend as reserve, settleSpend as settle, attachSpend } from "../payments/spend.js";

/** A credit reservation as kept between the call that opened it and the event that settles it. */
export interface SpendHold {
  /** The tenant's ledger entry; a capped token's entry is found from it. */
  id: string;
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
  });
  return { id: hold.entry.id, amount: r.amount };
}

async function entryOf(services: GatewayServices, hold: SpendHold) {
  const entry = await services.stores.ledger.get(hold.id);
  if (!entry) services.logger.error("credit hold missing from the ledger", { id: hold.id });
  return entry;
}

export async function settleSpend(services: GatewayServices, hold: SpendHold, finalAmount?: bigint): Promise<void> {
  const entry = await entryOf(services, hold);
  if (entry) await settle(services, entry, finalAmount);
}

export async function releaseSpend(services: GatewayServices, hold: SpendHold, reason: string): Promise<void> {
  const entry = await entryOf(services, hold);
  if (entry) await release(services, entry, reason);
}

/** Names the resource a hold pays for, so the ledger (and an operator) can see what is running on it. */
export async function attachResource(services: GatewayServices, hold: SpendHold, resource: string): Promise<void> {
  const entry = await entryOf(services, hold);
  if (entry) await attachSpend(services, entry, { resource });
}
