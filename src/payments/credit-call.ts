// One credit-billed call, billed here and nowhere else: its price reserved before it is sent (402 budget_exceeded, or
// token_cap_exceeded, when the budget cannot cover it), committed when the upstream did the work, released when it did
// not or nothing was sent. Who calls it is the row's `meter.settles` (src/routing/row.ts): the chain's meter step
// around the handler (middleware/meter), or the handler itself for a call it sends (cached search: a cached or
// coalesced answer sends nothing, so costs nothing).
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { Tenant } from "../identity/tenants.js";
import { chargeOf, type CreditHold, releaseCredits, reserveCredits, settleCredits } from "./credit-ledger.js";
import { priceOf } from "./kept-holds.js";
import type { LedgerServices } from "./spend.js";
import type { Meter } from "../routing/row.js";

export interface BilledCall {
  /** The row's name (the ledger's `route`) and its per-call meter. */
  row: { name: string; meter: Extract<Meter, { per: "call" }> };
  tenant: Tenant;
  cap: { id: string; amount: bigint } | undefined;
  /** How long an unsettled reservation stays open (a crash mid-call): then it is committed in full. */
  holdMs: number;
}

/** Reserves a call's price (what `billCall` holds): started early, beside the fleet's coalescing claim, by a search. */
export function reserveCall(services: LedgerServices, c: Context<GatewayEnv>, call: BilledCall): Promise<CreditHold> {
  return reserveCredits(services, c, {
    tenant: call.tenant,
    cap: call.cap,
    route: call.row.name,
    amount: priceOf(services, call.row.meter.price),
    meter: "call",
    validBefore: services.now() + call.holdMs,
  });
}

/**
 * Sends the call with its price held: `send` forwards it (the rest of the chain, or the upstream call) and answers the
 * upstream's response. `paid` is what was committed (0 when released, or when credits are off: then nothing is held).
 * `opts.held`: the reservation, already started (`reserveCall`). `opts.settleBehind`: the commit is recorded behind
 * the answer (the hold already counts the price in every window; a gateway that dies first leaves a hold the
 * reconciler commits in full once its `holdMs` passes).
 * @example const { response, paid } = await billCall(services, c, { row, tenant, cap, holdMs: 3_600_000 }, send)
 */
export async function billCall(
  services: LedgerServices,
  c: Context<GatewayEnv>,
  call: BilledCall,
  send: () => Promise<Response>,
  opts: { held?: Promise<CreditHold>; settleBehind?: boolean } = {},
): Promise<{ response: Response; paid: bigint }> {
  if (!services.config.credits.enabled) return { response: await send(), paid: 0n };
  const hold = await (opts.held ?? reserveCall(services, c, call));
  const amount = hold.amount;
  let response: Response;
  try {
    response = await send();
  } catch (err) {
    await releaseCredits(services, hold, `not forwarded: ${String((err as Error)?.message ?? err).slice(0, 120)}`);
    throw err;
  }
  if (!response.ok) {
    await releaseCredits(services, hold, `upstream answered ${response.status}`);
    return { response, paid: 0n };
  }
  if (opts.settleBehind) services.background(c, settleCredits(services, c, hold), "commit a credit call");
  else await settleCredits(services, c, hold);
  // The request log shows what the ledger records (the price × the tenant's multiplier), not the price held.
  c.get("logFields").credits = chargeOf(hold);
  return { response, paid: amount };
}
