// The shared-state interfaces. Each has three backends (memory, Redis, Durable Objects) and one contract test suite.
import type { TenantConfig } from "../../config/schema.js";

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

/** Which tenant owns an upstream resource: every kind a route-table row creates or addresses (src/routing/table.ts). */
const RESOURCE_KINDS = ["sandbox", "session", "snapshot", "volume", "profile", "extension", "job", "task"] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

/**
 * One resource a tenant owns: whether it is live (not marked ended) and the last status the gateway saw of it (absent
 * until one was seen; cleared when it is marked ended or active again, as its status changed then).
 */
export interface OwnedRecord {
  id: string;
  active: boolean;
  status?: string;
}

/** How long the owner of a resource that ended is remembered when config does not say (7 days). */
export const ENDED_RETENTION_MS = 7 * 86_400_000;

/**
 * Who owns what. A resource marked inactive (it ended: stopped, expired, deleted, a finished job) is remembered for a
 * retention window (config state.endedRetentionDays, default 7 days, counted from when it ended); after it, `owner`
 * answers undefined (so its reads are 404) and `list` leaves it out. Marking it active again (or claiming it) keeps it.
 */
export interface OwnershipRegistry {
  /**
   * Makes the resource the tenant's (its newest, active). The first claim wins: a resource another tenant owns is never
   * moved, and the answer is false (an id is not taken over by naming it, or by an upstream that answers a creation with
   * something that already exists). True when the resource is the tenant's now, claimed before by it or not.
   */
  claim(kind: ResourceKind, id: string, tenant: string): Promise<boolean>;
  owner(kind: ResourceKind, id: string): Promise<string | undefined>;
  /** Ids the tenant owns, newest first. */
  list(kind: ResourceKind, tenant: string): Promise<string[]>;
  /** The tenant's records, newest first (as `list`), each with its last known status: what a list page needs. */
  records(kind: ResourceKind, tenant: string): Promise<OwnedRecord[]>;
  /** Remembers the status the gateway last saw of a resource (unknown resources are left alone). */
  noteStatus(kind: ResourceKind, id: string, status: string): Promise<void>;
  /** Marks a resource inactive (it ended; its retention starts) or active again, without forgetting its owner. */
  setActive(kind: ResourceKind, id: string, active: boolean): Promise<void>;
  activeCount(kind: ResourceKind, tenant: string): Promise<number>;
}

/** Small expiring values: upstream runtime tokens, revoked token ids, cached upstream details. */
export interface KeyValueStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** Adds `by` to a counter (created at 0 with the ttl if absent) and returns the new value. */
  incrBy(key: string, by: number, ttlMs: number): Promise<number>;
  /**
   * Sets the key only if it holds no live value, atomically: of several callers (across instances) exactly one gets
   * true. Used for "exactly once across a fleet" (an alert per threshold and window, a kill per window).
   */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
}

/** Where a stored tenant's current definition came from: the config file (re-seeded at start-up) or the admin API. */
type TenantSource = "config" | "api";

export interface StoredTenant {
  tenant: TenantConfig;
  source: TenantSource;
  /** Deleted through the admin API: kept as a tombstone so the config file does not bring it back. */
  deleted?: boolean;
  updatedAt: number;
}

/**
 * The tenants and their key hashes, shared by every gateway instance. Readers keep a local snapshot and reload it
 * when `version()` changes, so a change made on one instance applies on all within a poll interval.
 */
export interface TenantStore {
  /** Grows on every write; equal versions mean equal contents. */
  version(): Promise<number>;
  /** Every record, tombstones included, ordered by id. */
  list(): Promise<StoredTenant[]>;
  get(id: string): Promise<StoredTenant | undefined>;
  /** Creates or replaces a tenant. */
  put(record: StoredTenant): Promise<void>;
  /** Creates a tenant only if no record (not even a tombstone) has its id; false otherwise. Atomic. */
  create(record: StoredTenant): Promise<boolean>;
  /**
   * Start-up seeding from the config file: writes the record when none exists or the existing one still comes from
   * the config (and differs); an API-made record (or tombstone) wins. Returns whether it wrote. Atomic.
   */
  seed(record: StoredTenant): Promise<boolean>;
}

/** One admin action: who did what to which target, the state before and after, and when. */
export interface AuditEntry {
  /** Grows with each append across the fleet; the paging cursor. */
  seq: number;
  at: number;
  /** The admin tenant that acted (or "system" for the kill switch acting on a budget). */
  actor: string;
  action: string;
  /** What was acted on, e.g. "tenant:acme" or "key:acme/1a2b3c4d5e6f7a8b". */
  target: string;
  before?: unknown;
  after?: unknown;
  requestId?: string;
}

export interface AuditLog {
  /** Appends an entry and returns it with its sequence number. */
  append(entry: Omit<AuditEntry, "seq">): Promise<AuditEntry>;
  /** Newest first; `before` (a seq from a previous page) returns only older entries. */
  list(query: { limit: number; before?: number }): Promise<AuditEntry[]>;
}

export type IdempotencyBegin = { state: "new" } | { state: "pending" } | { state: "done"; response: StoredResponse };

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  /** Body as base64. */
  body: string;
  /** Fingerprint of the request the key was first used with. */
  fingerprint: string;
}

export interface IdempotencyStore {
  /** Claims the key if unused; otherwise says whether its first request is still running or done. */
  begin(key: string, fingerprint: string, leaseMs: number): Promise<IdempotencyBegin>;
  complete(key: string, response: StoredResponse, ttlMs: number): Promise<void>;
  /** The first request failed before paying: let a retry run it again. */
  abandon(key: string): Promise<void>;
}

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch ms when the window resets. */
  resetAt: number;
}

export interface RateLimiter {
  hit(key: string, limit: number, windowMs: number, now: number): Promise<RateLimitResult>;
  /**
   * Adds `n` hits (0 reads) to `key`'s fixed window containing `now`, atomically, and returns the window's fleet-wide
   * count after it. The same counter `hit` counts in: an instance that counts in batches (middleware/rate-limit) and
   * one that counts each hit share it.
   */
  add(key: string, n: number, windowMs: number, now: number): Promise<number>;
}

/** One webhook delivery waiting in the outbox: an event for one destination. */
export interface OutboxMessage {
  /** `<event id>|<destination key>`: enqueueing the same id again adds nothing. */
  id: string;
  /** The event's own id (the `webhook-id` a receiver dedupes on). */
  event: string;
  /** The receiver's URL. */
  destination: string;
  /** The signed payload, as sent. */
  body: string;
  /** "standard" (Standard Webhooks JSON) or "slack" (a Slack-compatible `{text}` body). */
  format: string;
  /** Failed attempts so far. */
  attempts: number;
  /** Epoch ms: when it is next due (while claimed: when the claim lapses). */
  nextAt: number;
  createdAt: number;
  lastError?: string;
}

/**
 * Webhook deliveries that must survive a restart: enqueued once, then claimed by one instance at a time (a lease), and
 * either acknowledged (gone), retried later (due again at `nextAt`) or given up (moved to the dead letters). A claim
 * whose instance died lapses at the end of its lease and the message is due again: delivery is at least once, and
 * once per event fleet-wide unless an instance dies mid-delivery (receivers dedupe on `webhook-id`).
 */
export interface WebhookOutbox {
  /** Adds a message due at `nextAt` unless one with its id is waiting: false then. Atomic. */
  enqueue(message: Omit<OutboxMessage, "attempts">): Promise<boolean>;
  /**
   * Claims up to `limit` messages due at `now` for `owner` until `now + leaseMs`, soonest due first. Of instances
   * claiming at once, each message goes to exactly one. Atomic.
   */
  claim(owner: string, now: number, leaseMs: number, limit: number): Promise<OutboxMessage[]>;
  /** Delivered: forgets the message, if `owner` still holds its claim (false otherwise). */
  ack(id: string, owner: string): Promise<boolean>;
  /** Failed: counts the attempt and makes it due again at `nextAt`, if `owner` still holds its claim. */
  retry(id: string, owner: string, nextAt: number, error: string): Promise<boolean>;
  /** Given up: counts the attempt and moves it to the dead letters (newest first, the last 1,000 kept). */
  bury(id: string, owner: string, error: string): Promise<boolean>;
  /** Messages waiting (claimed or not), soonest due first; or the dead letters, newest first. */
  list(which: "pending" | "dead", limit: number): Promise<OutboxMessage[]>;
}

/**
 * One request as the per-tenant request log keeps it (src/operators/request-log.ts): what it was, how it ended, what it
 * cost. No body, header, query string or credential is ever in it.
 */
export interface RequestRecord {
  /** The request id (x-request-id). */
  id: string;
  /** Epoch ms the request arrived. */
  at: number;
  tenant: string;
  method: string;
  /** The route table's row name (e.g. "x402.web.search"), or the matched route. */
  route: string;
  /** The path without its query string, cut to 256 characters. */
  path: string;
  status: number;
  durationMs: number;
  /** Time spent waiting on the upstream, when it was called. */
  upstreamMs?: number;
  /** Atomic units (USD, 6 decimals) spent: x402 paid plus credits billed, as a decimal string; absent when nothing. */
  spend?: string;
  /**
   * Atomic units held, not spent: a session's, sandbox's or job's reservation (its maximum), open while it runs and
   * settled in the ledger at what it used when it ends. Never part of `spend`.
   */
  held?: string;
  /** The gateway's error code (`code` of the JSON error), when it refused or failed. */
  code?: string;
  traceId?: string;
  /** Cache outcome of a paid search (hit, coalesced, miss...). */
  cache?: string;
}

/**
 * The last requests of each tenant, bounded: appending keeps only the newest `keep` of the tenant (older ones drop
 * off). Written beside the request (never before the upstream call), read by the admin API and the console.
 */
export interface RequestLog {
  /** Appends records (any tenants), keeping each tenant's newest `keep`. */
  append(records: RequestRecord[], keep: number): Promise<void>;
  /** The tenant's records, newest first, at most `limit`. */
  list(tenant: string, limit: number): Promise<RequestRecord[]>;
}

/** Which of an upstream account's concurrency limits a resource counts against. */
export type AccountPool = "sessions" | "sandboxes";

/** What a take answered: the account a hold was taken on (none: every candidate was at its limit), and the counts seen. */
export interface AccountTake {
  account?: string;
  /** Live resources plus holds on each candidate looked at, before the hold. */
  counts: Record<string, number>;
}

/**
 * The sessions and sandboxes live on each upstream account, shared by the fleet (docs/accounts.md): what keeps an
 * account's concurrency limits for all gateway instances together. A creation takes a hold on the first candidate with
 * room before it is sent (one atomic step: of racing instances, no two take an account's last slot); the hold becomes
 * the resource once it is made, or is dropped; a resource seen to end frees its slot. Holds expire after their lease
 * (an instance that died mid-creation), live resources after `liveMs` (one that ended unseen).
 */
export interface AccountSlots {
  /** Takes a hold named `hold` on the first candidate whose count is below its limit (no limit: always room). */
  take(pool: AccountPool, candidates: Array<{ account: string; limit?: number }>, hold: string, leaseMs: number): Promise<AccountTake>;
  /** The hold became resource `id` (live until it ends), or, with no id, nothing was made: the hold is dropped. */
  settle(pool: AccountPool, account: string, hold: string, id: string | undefined, liveMs: number): Promise<void>;
  /** Resource `id` ended: its slot is free on whichever of `accounts` counted it (idempotent). */
  release(pool: AccountPool, accounts: string[], id: string): Promise<void>;
  /** Live resources plus holds on each account. */
  counts(pool: AccountPool, accounts: string[]): Promise<Record<string, number>>;
}

export interface StateStores {
  ledger: BudgetLedger;
  ownership: OwnershipRegistry;
  kv: KeyValueStore;
  idempotency: IdempotencyStore;
  rateLimiter: RateLimiter;
  /** Resolves once the backend answers a round trip; rejects with StateUnavailableError when it cannot (readiness). */
  ping(): Promise<void>;
  tenants: TenantStore;
  audit: AuditLog;
  /** Webhook deliveries (alerts), durable and shared by the fleet. */
  outbox: WebhookOutbox;
  /** The last requests of each tenant (bounded). */
  requests: RequestLog;
  /** Live sessions and sandboxes per upstream account (with [[upstream.accounts]] limits). */
  accountSlots: AccountSlots;
  close(): Promise<void>;
}
