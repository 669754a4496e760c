// The shared-state interfaces. Each has three backends (memory, Redis, Durable Objects) and one contract test suite.
import type { TenantConfig } from "../../config/schema.js";

// The ledger's types (entries, windows, limits, the BudgetLedger interface) are ledger-types.ts's, exported from here
// too so every store and caller names one module.
export * from "./ledger-types.js";
import type { BudgetLedger } from "./ledger-types.js";

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

/**
 * Who owns a resource and whether it is live (not marked ended): `owner` and the active flag of one record, read
 * together in one round trip (OwnershipRegistry.ownerRecord). An ended resource keeps its record for the retention.
 */
export interface ResourceOwner {
  tenant: string;
  active: boolean;
}

/** What a claim counted against a limit answered (OwnershipRegistry.claimWithin). */
export interface LimitedClaim {
  /**
   * "claimed": the resource is the tenant's now; "taken": another tenant's (nothing moved); "full": the tenant already
   * had `limit` active resources of the kind (it is not the tenant's live one: nothing is listed or counted).
   */
  outcome: "claimed" | "taken" | "full";
  /** The tenant's active resources of the kind after the step (the claimed one included). */
  active: number;
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
  /**
   * `claim`, counted against a limit in the same step (one round trip, atomic across instances): refused ("full")
   * when the tenant has `limit` active resources of the kind other than this one. A quota counted where the creation
   * is claimed (middleware/quota): of racing claims, never more than `limit` win. A "full" resource whose record was
   * written is left ended, the tenant's (the caller stops it upstream).
   */
  claimWithin(kind: ResourceKind, id: string, tenant: string, limit: number): Promise<LimitedClaim>;
  owner(kind: ResourceKind, id: string): Promise<string | undefined>;
  /**
   * `owner` with the record's active flag, read in the same round trip: what a credential that dies with its resource
   * (a live view ticket) is checked against. Never answered from a per-instance memory: another instance may have
   * ended the resource. Undefined where `owner` is.
   */
  ownerRecord(kind: ResourceKind, id: string): Promise<ResourceOwner | undefined>;
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
  /**
   * What operators did in an incident to a tenant the gateway's config file owns (src/identity/tenant-holds.ts): kept
   * over the file's block, so no restart or reload of the file undoes it.
   */
  holds?: TenantHolds;
}

/** An operator's holds on a file-owned tenant (docs/config-as-code.md#one-owner-per-tenant). */
export interface TenantHolds {
  /** Disabled (the kill switch) whatever the file says, until an operator enables it again. */
  disabled?: true;
  /** Hashes of the file's keys an operator revoked. */
  revoked?: string[];
  /** An earlier expiry an operator set on a file's key, by its hash. */
  expires?: Record<string, string>;
  /** Keys an operator issued, kept in state beside the file's. */
  added?: TenantConfig["keys"];
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

/**
 * Work that falls due at a time, shared by the fleet: ids filed under a queue with the epoch ms they are due (a time
 * sale settled at its window's end: src/sales/due.ts). Reading what is due takes nothing: the caller claims each item
 * (KeyValueStore.setIfAbsent) before acting on it, so of instances sweeping at once one acts, and removes it once done.
 */
export interface DueIndex {
  /** Files `id` under `queue`, due at `at` (filed again: its time moves). */
  add(queue: string, id: string, at: number): Promise<void>;
  /** Up to `limit` ids of `queue` due at `now` (due time <= now), soonest first. */
  due(queue: string, now: number, limit: number): Promise<string[]>;
  /** Forgets `id` (nothing when it is not filed). */
  remove(queue: string, id: string): Promise<void>;
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
  /** Work due at a time (time sales' window ends), shared by the fleet. */
  due: DueIndex;
  close(): Promise<void>;
}
