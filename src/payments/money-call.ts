// What a paid upstream call looks like from outside the money side: the x402 payer (./payer.ts, payX402) and the
// credit meter (./credit-meter.ts, billCredits) each hand their caller one of these. A caller that waits on the fleet's
// coalescing claim (the paid search) may start the call's early part beside it, then run the call with what it
// started, or drop that when another instance's answer is used instead; every other caller just runs it.
import type { LedgerEntry } from "../state/types.js";
import type { CreditHold } from "./credit-ledger.js";
import type { AheadHold } from "./paid-ahead.js";

export interface PaidResult {
  response: Response;
  /** Atomic units committed or held for this call (0 when nothing was paid). */
  paid: bigint;
  /** x402: the ledger entry of the payment. */
  entry?: LedgerEntry;
}

/** What was started beside the fleet's coalescing claim before the upstream answered (opaque to the caller). */
export interface EarlyMoney {
  /** x402: the unpaid first call, already sent, and the option last paid on the route reserved ahead (./paid-ahead.ts). */
  paid?: { first: Promise<Response>; ahead?: AheadHold };
  /** Credits: the call's reservation, already on its way. */
  credit?: Promise<CreditHold>;
}

export interface MoneyCall {
  /** Whether the call has an early part to start beside a claim. */
  readonly early: boolean;
  /** Starts the early part: the unpaid first call and a hold reserved ahead (x402), or the reservation (credits). */
  start(): EarlyMoney;
  /** The early part is not needed (the answer came from elsewhere): what it holds is given back, behind the call. */
  drop(early: EarlyMoney, reason: string): void;
  /** Sends the call, paid or billed (with its early part when started): the upstream's answer and what it cost. */
  run(early?: EarlyMoney): Promise<PaidResult>;
}
