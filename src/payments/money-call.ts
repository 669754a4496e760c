// What a paid upstream call looks like from outside the money side, and the one way both entries run it. The x402
// payer (./payer.ts, payX402) and the credit meter (./credit-meter.ts, billCredits) are each entered once per call and
// answer once: the upstream's answer with what it cost (and, when asked, the figures its client is shown), or, for a
// caller that hands in the fleet's coalescing claim (the paid search), another instance's answer used instead. The
// claim is the caller's (it is not money); what runs beside it (the unpaid first call, a hold reserved ahead, a credit
// reservation) and what is given back when the claim is lost is the money side's, here.
import type { Context } from "hono";
import type { Tenant } from "../identity/tenants.js";
import type { LedgerEntry } from "../state/types.js";
import { budgetRemaining, type RemainingReader } from "./budgets/remaining.js";
import type { CreditHold } from "./credit-ledger.js";
import { announceSavings, type MoneyEvents } from "./events.js";
import { atomicToUsd } from "./money.js";
import type { AheadHold } from "./paid-ahead.js";

export interface PaidResult {
  response: Response;
  /** Atomic units committed or held for this call (0 when nothing was paid). */
  paid: bigint;
  /** x402: the ledger entry of the payment. */
  entry?: LedgerEntry;
  /** What the client is shown of its money (asked for with `figures`): `x-tollgate-paid` and the budget left. */
  shown?: Shown;
}

/** The money headers of an answer: what this request paid (USD) and what the tenant may still spend. */
export interface Shown {
  paid: string;
  /** A figure this instance read lately (at once), or the ledger's (awaited): `x-tollgate-budget-remaining`. */
  remaining: string | Promise<string>;
}

/**
 * The fleet's coalescing claim as the caller makes it, asked once by the entry, beside the call's early part:
 * `send`: this instance sends the call (with what was started beside the claim); `answer`: another instance's answer
 * is used instead; `wait`: another instance is at it (what was started is given back), and waiting says which.
 */
type ClaimTurn<T> = { send: true } | { answer: T } | { wait: () => Promise<{ send: true } | { answer: T }> };
type Claim<T> = () => Promise<ClaimTurn<T>>;

/** What an entry answers: the paid call, or (only with a claim) the answer another instance published. */
export type Paid<T> = [T] extends [never] ? PaidResult : PaidResult | { elsewhere: T };

/** What was started beside the claim before the upstream answered. */
export interface EarlyMoney {
  /** x402: the unpaid first call, already sent, and the option last paid on the route reserved ahead (./paid-ahead.ts). */
  paid?: { first: Promise<Response>; ahead?: AheadHold };
  /** Credits: the call's reservation, already on its way. */
  credit?: Promise<CreditHold>;
}

/** A call's money as its entry runs it (inside payments/ only). */
export interface MoneySteps {
  /** Whether the call has an early part to start beside a claim. */
  readonly early: boolean;
  /** Starts the early part: the unpaid first call and a hold reserved ahead (x402), or the reservation (credits). */
  start(): EarlyMoney;
  /** The early part is not needed (the answer came from elsewhere): what it holds is given back, behind the call. */
  drop(early: EarlyMoney, reason: string): void;
  /** Sends the call, paid or billed (with its early part when started): the upstream's answer and what it cost. */
  run(early?: EarlyMoney): Promise<PaidResult>;
}

/** What an entry's caller may add to any call: the claim it waits on, and whether it shows the money figures. */
export interface CallOptions<T> {
  /** The fleet's coalescing claim (the paid search): the early part starts beside it. */
  claim?: Claim<T>;
  /** The answer shows `x-tollgate-paid` and `x-tollgate-budget-remaining`: computed here, handed back in `shown`. */
  figures?: boolean;
}

type FigureServices = RemainingReader & {
  moneyEvents?: MoneyEvents;
  background(c: Context | undefined, work: Promise<unknown>, what: string): void;
};

/** Runs a call's steps whole: beside the claim when there is one, then paid, or given back for another's answer. */
export async function runMoney<T>(
  services: FigureServices,
  who: { tenant: Tenant; context?: Context },
  steps: MoneySteps,
  opts: CallOptions<T>,
): Promise<Paid<T>> {
  const result = await runSteps(steps, opts.claim);
  if ("elsewhere" in result) return result as Paid<T>;
  if (opts.figures) result.shown = shownFigures(services, who.context, who.tenant, { paid: result.paid, justPaid: result.paid });
  return result as Paid<T>;
}

async function runSteps<T>(steps: MoneySteps, claim: Claim<T> | undefined): Promise<PaidResult | { elsewhere: T }> {
  if (!claim) return steps.run();
  const early = steps.early ? steps.start() : undefined;
  let turn: ClaimTurn<T>;
  try {
    turn = await claim();
  } catch (err) {
    if (early) steps.drop(early, "not sent: the fleet's claim failed");
    throw err;
  }
  if ("send" in turn) return steps.run(early);
  if (early) steps.drop(early, "reserved ahead; the answer came from the fleet");
  const next = "answer" in turn ? turn : await turn.wait();
  return "answer" in next ? { elsewhere: next.answer } : steps.run();
}

/**
 * The money figures of an answer: what it paid and the budget left (from what this instance read lately, refreshed
 * behind the answer, `justPaid` taken off at once).
 */
function shownFigures(services: FigureServices, c: Context | undefined, tenant: Tenant, o: { paid: bigint; justPaid: bigint }): Shown {
  return {
    paid: atomicToUsd(o.paid),
    remaining: budgetRemaining(services, tenant, {
      justPaid: o.justPaid,
      background: (work) => services.background(c, work, "budget figure reread"),
    }),
  };
}

/**
 * An answer the caller had without paying for it now (its cache, another's call it joined, an Idempotency-Key's
 * replay): the savings announced as a money event (a hit or a joined call), and the figures it shows. The paid search's
 * one entry for an answer that never reached the payer.
 * @example const shown = servedUnpaid(services, c, tenant, { how: "hit", saved: answer.paid, paid: 0n })
 */
export function servedUnpaid(
  services: FigureServices,
  c: Context | undefined,
  tenant: Tenant,
  o: { how: string; saved: bigint; paid: bigint },
): Shown {
  if (o.how === "hit" || o.how === "coalesced") announceSavings(services, c, tenant, o.how, o.saved);
  return shownFigures(services, c, tenant, { paid: o.paid, justPaid: 0n });
}
