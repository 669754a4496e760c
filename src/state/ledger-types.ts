// The ledger's shared-state types: an entry and its states, spend kinds, budget windows and limits, and the
// BudgetLedger interface its three backends (memory, Redis, Durable Objects) implement (src/state/types.ts re-exports
// them).
/** What a paid call's reservation is at any moment. */
export type LedgerState = "reserved" | "committed" | "released" | "uncertain";

/**
 * What kind of spend an entry records: an x402 payment the gateway signs (on-chain USDC), or a call billed to the
 * operator's upstream credits at a price from config. Both count against the same budgets, in the same atomic units
 * (USD with 6 decimals).
 */
export type SpendKind = "x402" | "credits";

export const SPEND_KINDS: readonly SpendKind[] = ["x402", "credits"];

/** Where a credits settlement came from: the upstream's report, or the price table's estimate. */
export type SettledFrom = "upstream" | "estimate";

/**
 * Why an upstream report was refused (src/payments/report-screen.ts): not a number, negative, NaN or infinite, above
 * credits.maxReportMultiple × the hold, or an answer that is not JSON.
 */
export type RefusedReason = "not_a_number" | "negative" | "not_finite" | "above_limit" | "unreadable";

/** What a credits commit records beside its amount (see LedgerEntry). Amounts atomic, as decimal strings. */
export interface SettlementFields {
  settledFrom?: SettledFrom;
  costAmount?: string;
  estimatedAmount?: string;
  refusedReport?: RefusedReason;
}

/** One reservation of spend. Amounts are atomic units (USD, 6 decimals) as decimal strings. */
export interface LedgerEntry {
  id: string;
  /** Entries written before kinds existed read back as "x402". */
  kind: SpendKind;
  tenant: string;
  route: string;
  /** Hash of the canonical request, so an entry can be matched with the call that caused it. */
  fingerprint: string;
  /** What counts against the budget: the reservation, or after a partial commit the final amount. */
  amount: string;
  /** The amount first reserved, when a commit settled for less (see BudgetLedger.commit). */
  reservedAmount?: string;
  /** x402: the token contract, its CAIP-2 network and the payee. Absent for credits. */
  asset?: string;
  network?: string;
  payee?: string;
  /** x402, filled in once signed. */
  payer?: string;
  /** x402 paid from an upstream account's own wallet (docs/accounts.md#wallets): that account. Absent: the gateway's wallet. */
  account?: string;
  nonce?: string;
  /**
   * Unix seconds. x402: after it the authorization can no longer be settled. Credits: set by the caller at reserve time
   * to when the resource ends at the latest (creation + timeout for a session or sandbox); after it the reconciler
   * commits the hold in full. Without it a hold goes stale 10 minutes after createdAt.
   */
  validBefore?: number;
  /** Settlement transaction hash from PAYMENT-RESPONSE (or found on chain on reconciliation). */
  transaction?: string;
  /** Credits: the unit the price is per ("call", "result", "page", "minute"). */
  meter?: string;
  /** Credits: the upstream resource a time-metered hold belongs to, e.g. "sandbox:<id>" or "session:<id>". */
  resource?: string;
  /**
   * Credits, once committed: where the final amount came from, the upstream's own report (`creditsUsed`, the work a
   * job answer counts) or the price table's estimate (the upstream said nothing usable).
   */
  settledFrom?: SettledFrom;
  /** Credits: the tenant's price multiplier (a decimal such as "1.25"), when it is not 1; `amount` includes it. */
  multiplier?: string;
  /** Credits, once committed: what the upstream charged (or is estimated to have charged), before the multiplier. */
  costAmount?: string;
  /** Credits, once committed: what the price table says the same work costs, before the multiplier (calibration). */
  estimatedAmount?: string;
  /**
   * Credits: the upstream reported a figure the gateway refused (why), so the entry was settled to the estimate (or
   * left as it was) instead; alerted once (`credits.report_refused`).
   */
  refusedReport?: RefusedReason;
  state: LedgerState;
  /** Why it was released or held uncertain. */
  reason?: string;
  /** Which gateway instance holds the reservation (crash recovery). */
  instance?: string;
  /** The OAuth grant (src/oauth/) whose token spent it, when one did. */
  grant?: string;
  /** Day and month windows the amount counts against (UTC), fixed at reservation. */
  day: string;
  month: string;
  createdAt: number;
  updatedAt: number;
}

export interface BudgetLimits {
  daily?: bigint;
  monthly?: bigint;
  total?: bigint;
}

export type BudgetWindow = "daily" | "monthly" | "total";

/** An amount per budget window. */
export interface WindowAmounts {
  daily: bigint;
  monthly: bigint;
  total: bigint;
}

/** A tenant's spend per window: both kinds summed (what budgets check), and each kind apart. */
export interface Usage extends WindowAmounts {
  byKind: Record<SpendKind, WindowAmounts>;
}

export type ReserveResult =
  | { ok: true; entry: LedgerEntry }
  | { ok: false; window: BudgetWindow; limit: bigint; spent: bigint; resetAt: string | null };

/** What a caller gives `reserve`; `kind` defaults to "x402". */
export type NewLedgerEntry = Omit<LedgerEntry, "kind" | "state" | "day" | "month" | "createdAt" | "updatedAt" | "reservedAmount"> & {
  kind?: SpendKind;
};

/** How much a hold grows by (atomic units) and how much later it ends (seconds); negative to give a growth back. */
export interface HoldGrowth {
  amount: bigint;
  seconds: number;
}

export interface LedgerFilter {
  tenant?: string;
  state?: LedgerState;
  kind?: SpendKind;
  resource?: string;
  limit?: number;
}

/**
 * Per-tenant budgets and the ledger of every reservation, of both kinds. `reserve` is atomic: it checks every window
 * (against the sum of both kinds) and counts the amount in all of them, or in none. Reserved, uncertain and committed
 * amounts all count as spent. Reserving an id that already exists returns the existing entry and counts nothing (safe
 * to retry). Backends other than memory reject with StateUnavailableError (./errors.ts) when they cannot be reached.
 */
export interface BudgetLedger {
  reserve(entry: NewLedgerEntry, limits: BudgetLimits, now: number): Promise<ReserveResult>;
  /**
   * Names what a hold is for once that is known: a time-metered hold is reserved before the create call, and its
   * resource id ("sandbox:<id>") comes in the answer. `validBefore` (unix seconds) moves the hold's end time.
   */
  attach(id: string, fields: { resource?: string; validBefore?: number }, now: number): Promise<void>;
  /**
   * Grows a hold (reserved or uncertain) by `by.amount` and moves its end time `by.seconds` later (from validBefore, or
   * from when a hold without one goes stale): a running resource given more time. Atomic like reserve, and checked the
   * same way, in the windows the hold counts in (its own day and month, fixed at reservation, and the total): counted
   * in all of them, or refused naming the window and changing nothing. Not idempotent: each call grows the hold again.
   * Negative figures give back an earlier growth (the upstream refused the extension) and are never refused.
   * @throws for an unknown id, or an entry already committed or released.
   */
  extend(id: string, by: HoldGrowth, limits: BudgetLimits, now: number): Promise<ReserveResult>;
  /**
   * The spend happened. With `finalAmount` below the reserved amount the difference goes back to every window the
   * entry counts in and `amount` becomes the final figure (`reservedAmount` keeps the reservation). A final amount
   * above the reservation is held to it for x402 (nothing can pay more than was signed); a credits entry records it
   * whole and counts the difference in its windows (the upstream charged it; a budget may end up past its limit).
   * `fields` are stored with the commit. Committing a committed entry again changes nothing.
   */
  commit(id: string, transaction: string | undefined, now: number, finalAmount?: bigint, fields?: SettlementFields): Promise<void>;
  /**
   * A committed credits entry settled again (the upstream's figure landed late, or changed): `amount` becomes
   * `finalAmount`, the difference (either sign) is counted in every window the entry counts in, and `fields` are
   * stored. Returns the difference. @throws for an unknown id, an x402 entry, or one not committed.
   */
  resettle(id: string, finalAmount: bigint, fields: SettlementFields, now: number): Promise<bigint>;
  /** The upstream definitely did not take the money: the amount is returned to the budget. */
  release(id: string, reason: string, now: number): Promise<void>;
  /** Outcome unknown: keep the amount counted until validBefore passes and the chain (or the clock) says what happened. */
  markUncertain(id: string, reason: string, now: number): Promise<void>;
  get(id: string): Promise<LedgerEntry | undefined>;
  /** Newest first. */
  list(filter: LedgerFilter): Promise<LedgerEntry[]>;
  usage(tenant: string, now: number): Promise<Usage>;
  /**
   * Crash recovery for x402: reserved or uncertain x402 entries whose validBefore (or, if never signed, createdAt +
   * 10 min) has passed at `now`, soonest-expired first, so a reconciler can settle them from chain truth.
   */
  expiredHolds(now: number, limit: number): Promise<LedgerEntry[]>;
  /**
   * Credits holds nobody settled: reserved or uncertain credits entries whose validBefore (or, without one, createdAt
   * + 10 min) has passed at `now`, soonest-expired first. The reconciler commits them at the reserved amount.
   */
  expiredCreditHolds(now: number, limit: number): Promise<LedgerEntry[]>;
}
