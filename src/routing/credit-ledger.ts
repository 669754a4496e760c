// Credit spend in the ledger: reserve against the tenant's budget windows (and a keyless token's cap), then commit
// (possibly less than reserved) or release. Atomic on every state backend through BudgetLedger.reserve.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../tenants.js";
import { atomicToUsd } from "../payments/money.js";
import { tenantLimits } from "../payments/paid-call.js";

export interface SpendHold {
  /** Ledger ids: the tenant's entry and, for a capped token, the token's. */
  ids: string[];
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
  const ledger = services.stores.ledger;
  const now = services.now();
  const id = crypto.randomUUID();
  const base = {
    kind: "credits" as const,
    route: r.route,
    fingerprint: c.get("requestId"),
    amount: r.amount.toString(),
    meter: r.meter,
    asset: "credits",
    network: "upstream",
    payee: "upstream",
    validBefore: Math.floor(r.validBefore / 1000),
    instance: services.instanceId,
  };
  const ids: string[] = [id];
  if (r.cap) {
    const capId = `${id}:cap`;
    const rc = await ledger.reserve({ ...base, id: capId, tenant: `token:${r.cap.id}` }, { total: r.cap.amount }, now);
    if (!rc.ok) {
      throw new GatewayError(402, "token_cap_exceeded", `This token's spend cap of $${atomicToUsd(r.cap.amount)} would be exceeded ($${atomicToUsd(rc.spent)} spent, this call costs $${atomicToUsd(r.amount)}).`, {
        limit: atomicToUsd(rc.limit),
        spent: atomicToUsd(rc.spent),
        price: atomicToUsd(r.amount),
      });
    }
    ids.push(capId);
  }
  const rt = await ledger.reserve({ ...base, id, tenant: r.tenant.id }, tenantLimits(r.tenant), now);
  if (!rt.ok) {
    if (ids.length > 1) await ledger.release(ids[1]!, "tenant budget exceeded", now);
    throw new GatewayError(
      402,
      "budget_exceeded",
      `The ${rt.window} budget of tenant "${r.tenant.id}" cannot cover this call: $${atomicToUsd(rt.spent)} of $${atomicToUsd(rt.limit)} spent, this call costs $${atomicToUsd(r.amount)}.${rt.resetAt ? ` It resets at ${rt.resetAt}.` : ""}`,
      { window: rt.window, limit: atomicToUsd(rt.limit), spent: atomicToUsd(rt.spent), price: atomicToUsd(r.amount), resetAt: rt.resetAt },
    );
  }
  return { ids, amount: r.amount };
}

export async function settleSpend(services: GatewayServices, hold: SpendHold, finalAmount?: bigint): Promise<void> {
  // TODO(ledger merge): BudgetLedger.commit takes the final amount.
  const commit = services.stores.ledger.commit.bind(services.stores.ledger) as (id: string, tx: undefined, now: number, amount?: bigint) => Promise<void>;
  for (const id of hold.ids) await commit(id, undefined, services.now(), finalAmount);
}

export async function releaseSpend(services: GatewayServices, hold: SpendHold, reason: string): Promise<void> {
  for (const id of hold.ids) await services.stores.ledger.release(id, reason, services.now());
}
