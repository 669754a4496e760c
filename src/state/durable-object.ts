// The TollgateState Durable Object: shared state for Tollgate on Workers, in SQLite-backed storage.
//
// Partitioning (names are built by ./durable-client.ts):
//   ledger:<tenant>      one object per tenant: its entries and window counters. A reserve touches only its tenant, so
//                        budgets are exact (one object serialises its own calls) and tenants never wait for each other.
//   ledger-index:<0-15>  id -> tenant, sharded by id: commit/release/get name only the id. Also the set of tenants, for
//                        the rare cross-tenant reads (an operator's list, the reconciler's expired holds).
//   res:<kind>:<id>      one object per resource: who owns it (the first claim wins there), whether it ended and when;
//                        an owner lookup asks only this object, created near the tenant that claimed it.
//   own:<tenant>         one object per tenant: the tenant's resources newest first, their liveness and last status
//                        (lists, counts). Both written on a claim, a change of liveness; status notes only here.
//   ownership            the previous layout's one object for every resource: read through while its rows are copied
//                        out (by the cron, a batch a minute), then never again (docs/state-layout.md).
//   tenant-records       one object: tenant records and their version counter (rare writes, polled reads).
//   audit                one object: the audit log, in sequence.
//   outbox               one object: webhook deliveries waiting (with their claims) and the dead letters.
//   due                  one object: work due at a time (time sales' window ends), by queue and due time.
//   requests:<tenant>    one object per tenant: its request log, the newest N kept (a busy tenant never slows another).
//   keys:<0-31>          expiring values, idempotency keys and rate-limit counters, sharded by key: no operation spans
//                        two keys, so shards scale them out; an alarm deletes expired rows.
// Every RPC method below is synchronous SQL inside one transaction, so it runs without interleaving.
import { DurableObject } from "cloudflare:workers";
import { OwnerTables, type OwnerRow } from "./durable-owner-tables.js";
import { LedgerTables, type SqlLike, type WireFilter, type WireLimits, type WireReserveResult } from "./durable-ledger.js";
import { refusal, SCHEMA, type StorageLike, SWEEP_MS } from "./durable-schema.js";
import type {
  IdempotencyBegin,
  LedgerEntry,
  LedgerState,
  NewLedgerEntry,
  OwnedRecord,
  ResourceOwner,
  ResourceKind,
  SettlementFields,
  SpendKind,
  StoredResponse,
} from "./types.js";

export class TollgateState extends DurableObject {
  private readonly storage: StorageLike;
  private readonly sql: SqlLike;
  private readonly ledger: LedgerTables;
  private readonly owners: OwnerTables;
  private sweepArmed = false;

  constructor(ctx: unknown, env: unknown) {
    super(ctx, env);
    this.storage = (this.ctx as { storage: StorageLike }).storage;
    this.sql = this.storage.sql;
    for (const q of SCHEMA) this.sql.exec(q);
    this.ledger = new LedgerTables(this.sql);
    this.owners = new OwnerTables(this.sql, (fn) => this.tx(fn));
  }

  private tx<T>(fn: () => T): T {
    return this.storage.transactionSync(fn);
  }
  private rows(query: string, ...bindings: unknown[]) {
    return this.sql.exec(query, ...bindings).toArray();
  }

  // ledger:<tenant>
  ledgerReserve(e: NewLedgerEntry, limits: WireLimits, now: number) {
    return this.tx(() => this.ledger.reserve(e, limits, now));
  }
  ledgerAttach(id: string, f: { resource?: string; validBefore?: number }, now: number) {
    return refusal(() => this.tx(() => this.ledger.attach(id, f, now)));
  }
  ledgerExtend(id: string, by: { amount: string; seconds: number }, limits: WireLimits, now: number) {
    let result: WireReserveResult | undefined;
    return refusal(() => (result = this.tx(() => this.ledger.extend(id, by, limits, now)))) ?? result!;
  }
  ledgerTransition(id: string, to: LedgerState, now: number, patch: Partial<LedgerEntry>, finalAmount?: string) {
    return refusal(() => this.tx(() => this.ledger.transition(id, to, now, patch, finalAmount)));
  }
  ledgerResettle(id: string, finalAmount: string, fields: SettlementFields, now: number) {
    let delta = "0";
    return refusal(() => (delta = this.tx(() => this.ledger.resettle(id, finalAmount, fields, now)))) ?? { delta };
  }
  ledgerGet(id: string) {
    return this.ledger.get(id);
  }
  ledgerList(filter: WireFilter, limit: number | undefined) {
    return this.ledger.list(filter, limit);
  }
  ledgerUsage(tenant: string, now: number) {
    return this.ledger.usage(tenant, now);
  }
  ledgerExpiredHolds(kind: SpendKind, now: number, limit: number) {
    return this.ledger.expiredHolds(kind, now, limit);
  }

  // ledger-index:<n>
  indexPut(id: string, tenant: string) {
    this.tx(() => {
      this.sql.exec("INSERT INTO ledger_index (id, tenant) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", id, tenant);
      this.sql.exec("INSERT INTO tenants (tenant) VALUES (?) ON CONFLICT (tenant) DO NOTHING", tenant);
    });
  }
  indexTenantOf(id: string): string | undefined {
    return this.rows("SELECT tenant FROM ledger_index WHERE id = ?", id)[0]?.tenant as string | undefined;
  }
  indexTenants(): string[] {
    return this.rows("SELECT tenant FROM tenants ORDER BY tenant").map((r) => r.tenant as string);
  }

  // ownership (res:<kind>:<id>, own:<tenant>, the previous layout's "ownership"): OwnerTables, durable-owner-tables.ts
  ownClaim(kind: ResourceKind, id: string, tenant: string, cutoff = 0): boolean {
    return this.owners.ownClaim(kind, id, tenant, cutoff);
  }
  ownClaimWithin(kind: ResourceKind, id: string, tenant: string, cutoff: number, limit: number): { claimed: boolean; active: number } {
    return this.owners.ownClaimWithin(kind, id, tenant, cutoff, limit);
  }
  ownDrop(kind: ResourceKind, id: string) {
    this.owners.ownDrop(kind, id);
  }
  ownOwner(kind: ResourceKind, id: string, cutoff = 0): string | undefined {
    return this.owners.ownOwner(kind, id, cutoff);
  }
  ownOwnerRecord(kind: ResourceKind, id: string, cutoff = 0): ResourceOwner | undefined {
    return this.owners.ownOwnerRecord(kind, id, cutoff);
  }
  ownRecords(kind: ResourceKind, tenant: string, cutoff = 0): OwnedRecord[] {
    return this.owners.ownRecords(kind, tenant, cutoff);
  }
  ownList(kind: ResourceKind, tenant: string, cutoff = 0): string[] {
    return this.owners.ownList(kind, tenant, cutoff);
  }
  ownNoteStatus(kind: ResourceKind, id: string, status: string) {
    this.owners.ownNoteStatus(kind, id, status);
  }
  ownSetActive(kind: ResourceKind, id: string, active: boolean, now = Date.now()) {
    this.owners.ownSetActive(kind, id, active, now);
  }
  ownRow(kind: ResourceKind, id: string): OwnerRow | undefined {
    return this.owners.ownRow(kind, id);
  }
  ownExport(afterSeq: number, limit: number, tenant?: string, kind?: ResourceKind): OwnerRow[] {
    return this.owners.ownExport(afterSeq, limit, tenant, kind);
  }
  ownImport(rows: OwnerRow[]) {
    this.owners.ownImport(rows);
  }
  metaGet(name: string): string | undefined {
    return this.owners.metaGet(name);
  }
  metaSet(name: string, value: string) {
    this.owners.metaSet(name, value);
  }
  ownLegacyState(): { done: boolean; cursor: number } {
    return this.owners.ownLegacyState();
  }
  ownActiveCount(kind: ResourceKind, tenant: string): number {
    return this.owners.ownActiveCount(kind, tenant);
  }

  // tenant-records
  tenantsVersion(): number {
    return (this.rows("SELECT value FROM record_versions WHERE name = 'tenants'")[0]?.value as number | undefined) ?? 0;
  }
  tenantsList(): string[] {
    return this.rows("SELECT record FROM tenant_records ORDER BY id").map((r) => r.record as string);
  }
  tenantsGet(id: string): string | undefined {
    return this.rows("SELECT record FROM tenant_records WHERE id = ?", id)[0]?.record as string | undefined;
  }
  /** mode "create" writes only a new id, "seed" only over an unchanged config-made record, "put" always. */
  tenantsWrite(mode: "put" | "create" | "seed", id: string, record: string, source: string, body: string): boolean {
    return this.tx(() => {
      const row = this.rows("SELECT source, body FROM tenant_records WHERE id = ?", id)[0];
      if (row && mode === "create") return false;
      if (row && mode === "seed" && (row.source !== "config" || row.body === body)) return false;
      this.sql.exec(
        "INSERT INTO tenant_records (id, record, source, body) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET record = ?, source = ?, body = ?",
        id,
        record,
        source,
        body,
        record,
        source,
        body,
      );
      this.sql.exec("INSERT INTO record_versions (name, value) VALUES ('tenants', 1) ON CONFLICT (name) DO UPDATE SET value = value + 1");
      return true;
    });
  }

  // audit
  auditAppend(entry: string): number {
    return this.tx(() => {
      this.sql.exec("INSERT INTO audit (entry) VALUES (?)", entry);
      return this.rows("SELECT last_insert_rowid() AS seq")[0].seq as number;
    });
  }
  auditList(limit: number, before: number | undefined): Array<{ seq: number; entry: string }> {
    const rows =
      before === undefined
        ? this.rows("SELECT seq, entry FROM audit ORDER BY seq DESC LIMIT ?", limit)
        : this.rows("SELECT seq, entry FROM audit WHERE seq < ? ORDER BY seq DESC LIMIT ?", before, limit);
    return rows.map((r) => ({ seq: r.seq as number, entry: r.entry as string }));
  }

  // outbox
  outboxEnqueue(id: string, message: string, nextAt: number): boolean {
    return this.tx(() => {
      if (this.rows("SELECT 1 FROM outbox WHERE id = ?", id).length) return false;
      this.sql.exec("INSERT INTO outbox (id, message, next_at, owner) VALUES (?, ?, ?, NULL)", id, message, nextAt);
      return true;
    });
  }
  outboxClaim(owner: string, now: number, leaseMs: number, limit: number): string[] {
    return this.tx(() =>
      this.rows("SELECT id, message FROM outbox WHERE next_at <= ? ORDER BY next_at LIMIT ?", now, limit).map((r) => {
        const m = { ...(JSON.parse(r.message as string) as { nextAt: number }), nextAt: now + leaseMs };
        const raw = JSON.stringify(m);
        this.sql.exec("UPDATE outbox SET message = ?, next_at = ?, owner = ? WHERE id = ?", raw, m.nextAt, owner, r.id);
        return raw;
      }),
    );
  }
  /** mode "ack" forgets the message, "retry" makes it due at nextAt, "bury" moves it to the dead letters. */
  outboxSettle(id: string, owner: string, mode: "ack" | "retry" | "bury", nextAt: number, error: string): boolean {
    return this.tx(() => {
      const row = this.rows("SELECT message, owner FROM outbox WHERE id = ?", id)[0];
      if (!row || row.owner !== owner) return false;
      if (mode === "ack") {
        this.sql.exec("DELETE FROM outbox WHERE id = ?", id);
        return true;
      }
      const m = JSON.parse(row.message as string) as { attempts: number; nextAt: number; lastError?: string };
      m.attempts++;
      m.lastError = error;
      if (mode === "retry") {
        m.nextAt = nextAt;
        this.sql.exec("UPDATE outbox SET message = ?, next_at = ?, owner = NULL WHERE id = ?", JSON.stringify(m), nextAt, id);
      } else {
        this.sql.exec("DELETE FROM outbox WHERE id = ?", id);
        this.sql.exec("INSERT INTO outbox_dead (message) VALUES (?)", JSON.stringify(m));
        this.sql.exec("DELETE FROM outbox_dead WHERE seq <= (SELECT MAX(seq) FROM outbox_dead) - 1000");
      }
      return true;
    });
  }
  // due
  dueAdd(queue: string, id: string, at: number) {
    this.sql.exec("INSERT INTO due (queue, id, at) VALUES (?, ?, ?) ON CONFLICT (queue, id) DO UPDATE SET at = ?", queue, id, at, at);
  }
  dueList(queue: string, now: number, limit: number): string[] {
    return this.rows("SELECT id FROM due WHERE queue = ? AND at <= ? ORDER BY at, id LIMIT ?", queue, now, limit).map(
      (r) => r.id as string,
    );
  }
  dueRemove(queue: string, id: string) {
    this.sql.exec("DELETE FROM due WHERE queue = ? AND id = ?", queue, id);
  }

  outboxList(which: "pending" | "dead", limit: number): string[] {
    const rows =
      which === "dead"
        ? this.rows("SELECT message FROM outbox_dead ORDER BY seq DESC LIMIT ?", limit)
        : this.rows("SELECT message FROM outbox ORDER BY next_at LIMIT ?", limit);
    return rows.map((r) => r.message as string);
  }

  // requests:<tenant>
  requestsAppend(records: string[], keep: number): void {
    this.tx(() => {
      for (const r of records) this.sql.exec("INSERT INTO requests (record) VALUES (?)", r);
      this.sql.exec("DELETE FROM requests WHERE seq <= (SELECT MAX(seq) FROM requests) - ?", keep);
    });
  }
  requestsList(limit: number): string[] {
    return this.rows("SELECT record FROM requests ORDER BY seq DESC LIMIT ?", limit).map((r) => r.record as string);
  }

  // account-slots:<pool>: live sessions or sandboxes per upstream account (src/state/types.ts AccountSlots)
  private slotCount(account: string, now: number): number {
    this.sql.exec("DELETE FROM account_slots WHERE account = ? AND expires_at <= ?", account, now);
    return this.rows("SELECT COUNT(*) AS n FROM account_slots WHERE account = ?", account)[0]!.n as number;
  }
  slotsTake(candidates: Array<{ account: string; limit?: number }>, hold: string, leaseMs: number) {
    return this.tx(() => {
      const now = Date.now();
      const out: { account?: string; counts: Record<string, number> } = { counts: {} };
      for (const c of candidates) {
        const n = this.slotCount(c.account, now);
        out.counts[c.account] = n;
        if (out.account === undefined && (c.limit === undefined || c.limit === null || n < c.limit)) {
          this.sql.exec(
            "INSERT OR REPLACE INTO account_slots (account, member, expires_at) VALUES (?, ?, ?)",
            c.account,
            hold,
            now + leaseMs,
          );
          out.account = c.account;
        }
      }
      return out;
    });
  }
  slotsSettle(account: string, hold: string, id: string | null, liveMs: number) {
    this.tx(() => {
      this.sql.exec("DELETE FROM account_slots WHERE account = ? AND member = ?", account, hold);
      if (id !== null)
        this.sql.exec(
          "INSERT OR REPLACE INTO account_slots (account, member, expires_at) VALUES (?, ?, ?)",
          account,
          id,
          Date.now() + liveMs,
        );
    });
  }
  slotsRelease(accounts: string[], id: string) {
    this.tx(() => {
      for (const a of accounts) this.sql.exec("DELETE FROM account_slots WHERE account = ? AND member = ?", a, id);
    });
  }
  slotsCounts(accounts: string[]): Record<string, number> {
    return this.tx(() => {
      const now = Date.now();
      const out: Record<string, number> = {};
      for (const a of accounts) out[a] = this.slotCount(a, now);
      return out;
    });
  }

  // keys:<n>
  private live(table: "kv" | "idem", key: string) {
    const row = this.rows(`SELECT * FROM ${table} WHERE key = ?`, key)[0];
    if (row && (row.expires_at as number) <= Date.now()) {
      this.sql.exec(`DELETE FROM ${table} WHERE key = ?`, key);
      return undefined;
    }
    return row;
  }
  private armSweep() {
    if (this.sweepArmed) return;
    this.sweepArmed = true;
    // Not awaited: a Durable Object stays alive while its work is pending (waitUntil has no effect here). A failure
    // leaves the sweep to be armed by the next write instead of rejecting unhandled.
    this.storage
      .getAlarm()
      .then((at) => (at === null ? this.storage.setAlarm(Date.now() + SWEEP_MS) : undefined))
      .catch(() => (this.sweepArmed = false));
  }
  async alarm() {
    const now = Date.now();
    this.sql.exec("DELETE FROM kv WHERE expires_at <= ?", now);
    this.sql.exec("DELETE FROM idem WHERE expires_at <= ?", now);
    const left = (this.rows("SELECT (SELECT COUNT(*) FROM kv) + (SELECT COUNT(*) FROM idem) AS n")[0].n as number) > 0;
    this.sweepArmed = left;
    if (left) await this.storage.setAlarm(now + SWEEP_MS);
  }

  kvGet(key: string): string | undefined {
    return this.tx(() => this.live("kv", key)?.value as string | undefined);
  }
  kvSet(key: string, value: string, ttlMs: number) {
    const exp = Date.now() + ttlMs;
    this.sql.exec(
      "INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = ?, expires_at = ?",
      key,
      value,
      exp,
      value,
      exp,
    );
    this.armSweep();
  }
  kvSetIfAbsent(key: string, value: string, ttlMs: number): boolean {
    const set = this.tx(() => {
      if (this.live("kv", key)) return false;
      this.sql.exec("INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?)", key, value, Date.now() + ttlMs);
      return true;
    });
    this.armSweep();
    return set;
  }
  kvDelete(key: string) {
    this.sql.exec("DELETE FROM kv WHERE key = ?", key);
  }
  kvIncrBy(key: string, by: number, ttlMs: number): number {
    const n = this.tx(() => {
      const row = this.live("kv", key);
      const next = (row ? Number(row.value) : 0) + by;
      if (row) this.sql.exec("UPDATE kv SET value = ? WHERE key = ?", String(next), key);
      else this.sql.exec("INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?)", key, String(next), Date.now() + ttlMs);
      return next;
    });
    this.armSweep();
    return n;
  }

  idemBegin(key: string, leaseMs: number): IdempotencyBegin {
    const r = this.tx((): IdempotencyBegin => {
      const row = this.live("idem", key);
      if (row)
        return row.pending ? { state: "pending" } : { state: "done", response: JSON.parse(row.response as string) as StoredResponse };
      this.sql.exec("INSERT INTO idem (key, pending, response, expires_at) VALUES (?, 1, NULL, ?)", key, Date.now() + leaseMs);
      return { state: "new" };
    });
    this.armSweep();
    return r;
  }
  idemComplete(key: string, response: StoredResponse, ttlMs: number) {
    const exp = Date.now() + ttlMs;
    const body = JSON.stringify(response);
    this.sql.exec(
      "INSERT INTO idem (key, pending, response, expires_at) VALUES (?, 0, ?, ?) ON CONFLICT (key) DO UPDATE SET pending = 0, response = ?, expires_at = ?",
      key,
      body,
      exp,
      body,
      exp,
    );
    this.armSweep();
  }
  idemAbandon(key: string) {
    this.sql.exec("DELETE FROM idem WHERE key = ?", key);
  }
}

/** The methods a client calls on a TollgateState stub; each returns a promise across the RPC boundary. */
export type TollgateStateStub = {
  // biome-ignore lint/suspicious/noExplicitAny: the widest function type, to pick methods; `unknown[]` parameters would not match them
  [K in keyof TollgateState as TollgateState[K] extends (...a: any[]) => unknown ? K : never]: TollgateState[K] extends (
    ...a: infer A
  ) => infer R
    ? (...a: A) => Promise<Awaited<R>>
    : never;
};
