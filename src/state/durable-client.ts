// The state interfaces over TollgateState Durable Object stubs (Workers RPC). See ./durable-object.ts for which object
// holds what. Calls that fail for any reason but the ledger's own refusals reject with StateUnavailableError.
import { type LocationHints, Objects, shard, type StateNamespace } from "./durable-objects.js";
import { DurableOwnership } from "./durable-ownership.js";
import type { SequencedEntry, WireFilter, WireLimits } from "./durable-ledger.js";
import { bounded, FAN_OUT, groupBy } from "./fan-out.js";
import { holdExpiresAt } from "./holds.js";
import type {
  BudgetLedger,
  BudgetLimits,
  BudgetWindow,
  DueIndex,
  HoldGrowth,
  IdempotencyBegin,
  IdempotencyStore,
  KeyValueStore,
  LedgerEntry,
  LedgerFilter,
  AuditEntry,
  AuditLog,
  StoredTenant,
  TenantStore,
  OutboxMessage,
  WebhookOutbox,
  RequestLog,
  RequestRecord,
  AccountPool,
  AccountSlots,
  LedgerState,
  NewLedgerEntry,
  ReserveResult,
  SettlementFields,
  SpendKind,
  StateStores,
  StoredResponse,
  Usage,
} from "./types.js";
import { ENDED_RETENTION_MS } from "./types.js";
import { settlementPatch, usageOf } from "./windows.js";
import { stateKeys } from "./keys.js";
import { FixedWindowRateLimiter } from "./fixed-window.js";

const DEFAULT_BINDING = "TOLLGATE_STATE";
const INDEX_SHARDS = 16;
const KEY_SHARDS = 32;
const WINDOWS: BudgetWindow[] = ["daily", "monthly", "total"];

function decimal(name: string, v: bigint | string): string {
  const s = v.toString();
  if (!/^(0|[1-9]\d*)$/.test(s)) throw new RangeError(`${name} must be a non-negative integer in atomic units, got "${s}"`);
  return s;
}

function refused(r: { refused: string } | undefined) {
  if (r) throw new Error(r.refused);
}

const strip = ({ seq: _seq, ...e }: SequencedEntry): LedgerEntry => e;

class DurableLedger implements BudgetLedger {
  /** id -> tenant, learnt at reserve time: the calls that follow a reserve usually come from the same isolate. */
  private readonly tenants = new Map<string, string>();
  /** Tenants whose first reservation in this isolate listed them in the index (its later ones write it alongside). */
  private readonly listed = new Set<string>();
  constructor(private readonly o: Objects) {}

  private remember(id: string, tenant: string) {
    if (this.tenants.size >= 10_000) this.tenants.clear();
    this.tenants.set(id, tenant);
  }
  private async tenantOf(id: string): Promise<string | undefined> {
    const known = this.tenants.get(id);
    if (known !== undefined) return known;
    const t = await this.o.call(`ledger-index:${shard(id, INDEX_SHARDS)}`, (s) => s.indexTenantOf(id));
    if (t !== undefined) this.remember(id, t);
    return t;
  }
  private async ledgerOf(id: string) {
    const t = await this.tenantOf(id);
    if (t === undefined) throw new Error(`ledger entry ${id} not found`);
    return `ledger:${t}`;
  }
  private async allTenants(): Promise<string[]> {
    const shards = await Promise.all(
      Array.from({ length: INDEX_SHARDS }, (_, i) => this.o.call(`ledger-index:${i}`, (s) => s.indexTenants())),
    );
    return [...new Set(shards.flat())];
  }

  async reserve(e: NewLedgerEntry, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    const amount = decimal("amount", e.amount);
    const wire: WireLimits = {};
    for (const w of WINDOWS) if (limits[w] !== undefined) wire[w] = decimal(`${w} limit`, limits[w]!);
    const index = () => this.o.call(`ledger-index:${shard(e.id, INDEX_SHARDS)}`, (s) => s.indexPut(e.id, e.tenant));
    const reserve = () => this.o.call(`ledger:${e.tenant}`, (s) => s.ledgerReserve({ ...e, amount }, wire, now), e.tenant);
    this.remember(e.id, e.tenant);
    let r: Awaited<ReturnType<typeof reserve>>;
    if (!this.listed.has(e.tenant)) {
      // The tenant's first reservation in this isolate writes the index first: the tenant is then listed where the fleet
      // views (the reconciler's expired holds) read, before any entry of it can exist.
      await index();
      if (this.listed.size >= 10_000) this.listed.clear();
      this.listed.add(e.tenant);
      r = await reserve();
    } else {
      // The id's index entry beside the reservation, in the same round trip. Both must land: a reservation whose index
      // write failed fails closed like one that got no answer (nothing is signed on it; it is released by its id, which
      // this isolate remembers, or expires unsigned and the reconciler finds it through its listed tenant).
      [, r] = await Promise.all([index(), reserve()]);
    }
    if (r.ok) return r;
    return { ok: false, window: r.window, limit: BigInt(r.limit), spent: BigInt(r.spent), resetAt: r.resetAt };
  }
  async attach(id: string, f: { resource?: string; validBefore?: number }, now: number) {
    const fields: { resource?: string; validBefore?: number } = {};
    if (f.resource !== undefined) fields.resource = f.resource;
    if (f.validBefore !== undefined) fields.validBefore = f.validBefore;
    refused(await this.o.call(await this.ledgerOf(id), (s) => s.ledgerAttach(id, fields, now)));
  }
  async extend(id: string, by: HoldGrowth, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    const amount = by.amount < 0n ? `-${decimal("amount", -by.amount)}` : decimal("amount", by.amount);
    const wire: WireLimits = {};
    for (const w of WINDOWS) if (limits[w] !== undefined) wire[w] = decimal(`${w} limit`, limits[w]!);
    const r = await this.o.call(await this.ledgerOf(id), (s) => s.ledgerExtend(id, { amount, seconds: by.seconds }, wire, now));
    if ("refused" in r) throw new Error(r.refused);
    if (r.ok) return r;
    return { ok: false, window: r.window, limit: BigInt(r.limit), spent: BigInt(r.spent), resetAt: r.resetAt };
  }
  private async transition(id: string, to: LedgerState, now: number, patch: Partial<LedgerEntry>, finalAmount?: string) {
    refused(await this.o.call(await this.ledgerOf(id), (s) => s.ledgerTransition(id, to, now, patch, finalAmount)));
  }
  async commit(id: string, transaction: string | undefined, now: number, finalAmount?: bigint, fields?: SettlementFields) {
    if (finalAmount !== undefined && finalAmount < 0n) throw new RangeError(`final amount must not be negative, got ${finalAmount}`);
    const final = finalAmount === undefined ? undefined : decimal("final amount", finalAmount);
    return this.transition(id, "committed", now, { ...settlementPatch(fields), ...(transaction ? { transaction } : {}) }, final);
  }
  async resettle(id: string, finalAmount: bigint, fields: SettlementFields, now: number): Promise<bigint> {
    const final = decimal("final amount", finalAmount);
    const r = await this.o.call(await this.ledgerOf(id), (s) => s.ledgerResettle(id, final, settlementPatch(fields), now));
    if ("refused" in r) throw new Error(r.refused);
    return BigInt(r.delta);
  }
  release(id: string, reason: string, now: number) {
    return this.transition(id, "released", now, { reason });
  }
  markUncertain(id: string, reason: string, now: number) {
    return this.transition(id, "uncertain", now, { reason });
  }
  async get(id: string) {
    const t = await this.tenantOf(id);
    return t === undefined ? undefined : this.o.call(`ledger:${t}`, (s) => s.ledgerGet(id));
  }
  async list(f: LedgerFilter) {
    const wire: WireFilter = {};
    if (f.state !== undefined) wire.state = f.state;
    if (f.kind !== undefined) wire.kind = f.kind;
    if (f.resource !== undefined) wire.resource = f.resource;
    if (f.tenant !== undefined) return (await this.o.call(`ledger:${f.tenant}`, (s) => s.ledgerList(wire, f.limit), f.tenant)).map(strip);
    // Across tenants: each object's newest, merged. Sequences are per object, so ties on createdAt order arbitrarily.
    const tenants = await this.allTenants();
    const lists = await bounded(tenants, FAN_OUT, (t) => this.o.call(`ledger:${t}`, (s) => s.ledgerList(wire, f.limit)));
    const merged = lists.flat().sort((a, b) => b.createdAt - a.createdAt || b.seq - a.seq);
    return (f.limit ? merged.slice(0, f.limit) : merged).map(strip);
  }
  async usage(tenant: string, now: number): Promise<Usage> {
    const u = await this.o.call(`ledger:${tenant}`, (s) => s.ledgerUsage(tenant, now), tenant);
    const big = (w: Record<BudgetWindow, string>) => ({ daily: BigInt(w.daily), monthly: BigInt(w.monthly), total: BigInt(w.total) });
    return usageOf(big(u), big(u.credits));
  }
  /** Every tenant's object is asked (they are listed in the index shards): meant for a periodic reconciler. */
  private async holds(kind: SpendKind, now: number, limit: number) {
    const tenants = await this.allTenants();
    const lists = await bounded(tenants, FAN_OUT, (t) => this.o.call(`ledger:${t}`, (s) => s.ledgerExpiredHolds(kind, now, limit)));
    return lists
      .flat()
      .sort((a, b) => holdExpiresAt(a) - holdExpiresAt(b))
      .slice(0, limit);
  }
  expiredHolds(now: number, limit: number) {
    return this.holds("x402", now, limit);
  }
  expiredCreditHolds(now: number, limit: number) {
    return this.holds("credits", now, limit);
  }
}

/**
 * One step of moving Durable Object state from the previous layout (run by the Worker's cron): true once nothing is
 * left to move. Other backends have nothing to move.
 */
export function migrateDurableState(stores: StateStores): Promise<boolean> {
  // Found on the stores object itself: the gateway wraps the registries (metering, remembered owners) by spreading the
  // stores, which keeps this property and hides the DurableOwnership instance.
  const step = (stores as { migrateLegacyState?: () => Promise<boolean> }).migrateLegacyState;
  return typeof step === "function" ? step() : Promise.resolve(true);
}

const keyObject = (key: string) => `keys:${shard(key, KEY_SHARDS)}`;

class DurableKeyValue implements KeyValueStore {
  constructor(private readonly o: Objects) {}
  get(key: string) {
    return this.o.call(keyObject(key), (s) => s.kvGet(key));
  }
  async set(key: string, value: string, ttlMs: number) {
    await this.o.call(keyObject(key), (s) => s.kvSet(key, value, ttlMs));
  }
  async delete(key: string) {
    await this.o.call(keyObject(key), (s) => s.kvDelete(key));
  }
  incrBy(key: string, by: number, ttlMs: number) {
    return this.o.call(keyObject(key), (s) => s.kvIncrBy(key, by, ttlMs));
  }
  setIfAbsent(key: string, value: string, ttlMs: number) {
    return this.o.call(keyObject(key), (s) => s.kvSetIfAbsent(key, value, ttlMs));
  }
}

/** Due items: one object (`due`), by queue and due time. */
class DurableDueIndex implements DueIndex {
  constructor(private readonly o: Objects) {}
  async add(queue: string, id: string, at: number) {
    await this.o.call("due", (s) => s.dueAdd(queue, id, at));
  }
  due(queue: string, now: number, limit: number) {
    return this.o.call("due", (s) => s.dueList(queue, now, limit));
  }
  async remove(queue: string, id: string) {
    await this.o.call("due", (s) => s.dueRemove(queue, id));
  }
}

class DurableTenantStore implements TenantStore {
  constructor(private readonly o: Objects) {}
  private write(mode: "put" | "create" | "seed", rec: StoredTenant) {
    const source = rec.deleted ? "deleted" : rec.source;
    return this.o.call("tenant-records", (s) =>
      s.tenantsWrite(mode, rec.tenant.id, JSON.stringify(rec), source, JSON.stringify(rec.tenant)),
    );
  }
  version() {
    return this.o.call("tenant-records", (s) => s.tenantsVersion());
  }
  async list() {
    return (await this.o.call("tenant-records", (s) => s.tenantsList())).map((r) => JSON.parse(r) as StoredTenant);
  }
  async get(id: string) {
    const r = await this.o.call("tenant-records", (s) => s.tenantsGet(id));
    return r === undefined ? undefined : (JSON.parse(r) as StoredTenant);
  }
  async put(rec: StoredTenant) {
    await this.write("put", rec);
  }
  create(rec: StoredTenant) {
    return this.write("create", rec);
  }
  seed(rec: StoredTenant) {
    return this.write("seed", rec);
  }
}

class DurableAuditLog implements AuditLog {
  constructor(private readonly o: Objects) {}
  async append(entry: Omit<AuditEntry, "seq">) {
    const seq = await this.o.call("audit", (s) => s.auditAppend(JSON.stringify(entry)));
    return { ...entry, seq };
  }
  async list(q: { limit: number; before?: number }) {
    const rows = await this.o.call("audit", (s) => s.auditList(q.limit, q.before));
    return rows.map((r) => ({ ...(JSON.parse(r.entry) as Omit<AuditEntry, "seq">), seq: r.seq }));
  }
}

class DurableOutbox implements WebhookOutbox {
  constructor(private readonly o: Objects) {}
  enqueue(message: Omit<OutboxMessage, "attempts">) {
    const m: OutboxMessage = { ...message, attempts: 0 };
    return this.o.call("outbox", (s) => s.outboxEnqueue(m.id, JSON.stringify(m), m.nextAt));
  }
  async claim(owner: string, now: number, leaseMs: number, limit: number) {
    return (await this.o.call("outbox", (s) => s.outboxClaim(owner, now, leaseMs, limit))).map((r) => JSON.parse(r) as OutboxMessage);
  }
  ack(id: string, owner: string) {
    return this.o.call("outbox", (s) => s.outboxSettle(id, owner, "ack", 0, ""));
  }
  retry(id: string, owner: string, nextAt: number, error: string) {
    return this.o.call("outbox", (s) => s.outboxSettle(id, owner, "retry", nextAt, error));
  }
  bury(id: string, owner: string, error: string) {
    return this.o.call("outbox", (s) => s.outboxSettle(id, owner, "bury", 0, error));
  }
  async list(which: "pending" | "dead", limit: number) {
    return (await this.o.call("outbox", (s) => s.outboxList(which, limit))).map((r) => JSON.parse(r) as OutboxMessage);
  }
}

/** The request log: one object per tenant (`requests:<tenant>`), one RPC per tenant per batch of records. */
class DurableRequestLog implements RequestLog {
  constructor(private readonly o: Objects) {}
  async append(records: RequestRecord[], keep: number) {
    const byTenant = groupBy(
      records,
      (r) => r.tenant,
      (r) => JSON.stringify(r),
    );
    await Promise.all([...byTenant].map(([tenant, rows]) => this.o.call(`requests:${tenant}`, (s) => s.requestsAppend(rows, keep))));
  }
  async list(tenant: string, limit: number) {
    return (await this.o.call(`requests:${tenant}`, (s) => s.requestsList(limit))).map((r) => JSON.parse(r) as RequestRecord);
  }
}

/**
 * Live sessions and sandboxes per upstream account: one object per pool (`account-slots:<pool>`) holding every
 * account's, so a take over several candidates is one call to one object, atomic there.
 */
class DurableAccountSlots implements AccountSlots {
  constructor(private readonly o: Objects) {}
  take(pool: AccountPool, candidates: Array<{ account: string; limit?: number }>, hold: string, leaseMs: number) {
    return this.o.call(`account-slots:${pool}`, (s) => s.slotsTake(candidates, hold, leaseMs));
  }
  async settle(pool: AccountPool, account: string, hold: string, id: string | undefined, liveMs: number) {
    await this.o.call(`account-slots:${pool}`, (s) => s.slotsSettle(account, hold, id ?? null, liveMs));
  }
  async release(pool: AccountPool, accounts: string[], id: string) {
    await this.o.call(`account-slots:${pool}`, (s) => s.slotsRelease(accounts, id));
  }
  counts(pool: AccountPool, accounts: string[]) {
    return this.o.call(`account-slots:${pool}`, (s) => s.slotsCounts(accounts));
  }
}

class DurableIdempotency implements IdempotencyStore {
  constructor(private readonly o: Objects) {}
  begin(key: string, _fingerprint: string, leaseMs: number): Promise<IdempotencyBegin> {
    return this.o.call(keyObject(`idem:${key}`), (s) => s.idemBegin(key, leaseMs));
  }
  async complete(key: string, response: StoredResponse, ttlMs: number) {
    await this.o.call(keyObject(`idem:${key}`), (s) => s.idemComplete(key, response, ttlMs));
  }
  async abandon(key: string) {
    await this.o.call(keyObject(`idem:${key}`), (s) => s.idemAbandon(key));
  }
}

export interface DurableStoresOptions {
  /** The binding's name in env (default TOLLGATE_STATE). */
  binding?: string;
  /** Prepended to every object name, so several deployments (or tests) can share one namespace. */
  namespace?: string;
  /** How long the owner of an ended resource is remembered (default 7 days). */
  endedRetentionMs?: number;
  /** A tenant's location hint (tenants[].locationHint): where its ledger and ownership objects are created. */
  locationHint?: LocationHints;
}

/** True when env carries the TollgateState binding. */
export function hasStateBinding(env: Record<string, unknown>, binding = DEFAULT_BINDING): boolean {
  const ns = env[binding] as Partial<StateNamespace> | undefined;
  return typeof ns?.idFromName === "function" && typeof ns?.get === "function";
}

/** State stores on TollgateState Durable Objects; several isolates and colos share budgets exactly. */
export function doStores(env: Record<string, unknown>, opts: DurableStoresOptions = {}): StateStores {
  const binding = opts.binding ?? DEFAULT_BINDING;
  if (!hasStateBinding(env, binding)) {
    throw new Error(`state.backend "durable-objects" needs the Durable Object binding ${binding} (see wrangler.toml)`);
  }
  const o = new Objects(env[binding] as StateNamespace, opts.namespace ? `${opts.namespace}/` : "", opts.locationHint);
  const kv = new DurableKeyValue(o);
  const ownership = new DurableOwnership(o, opts.endedRetentionMs ?? ENDED_RETENTION_MS);
  const stores: StateStores & { migrateLegacyState: () => Promise<boolean> } = {
    // One step of moving the previous layout out (migrateDurableState, the Worker's cron).
    migrateLegacyState: () => ownership.migrateLegacy(),
    ledger: new DurableLedger(o),
    ownership,
    kv,
    idempotency: new DurableIdempotency(o),
    rateLimiter: new FixedWindowRateLimiter(kv),
    // A read of one key object: a real round trip to a Durable Object, with no side effect.
    ping: async () => void (await kv.get(stateKeys.ping)),
    tenants: new DurableTenantStore(o),
    audit: new DurableAuditLog(o),
    outbox: new DurableOutbox(o),
    requests: new DurableRequestLog(o),
    accountSlots: new DurableAccountSlots(o),
    due: new DurableDueIndex(o),
    async close() {},
  };
  return stores;
}
