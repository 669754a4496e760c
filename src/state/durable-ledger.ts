// One tenant's ledger inside its Durable Object: entries and window counters in SQLite. Every method is synchronous
// and runs in one storage transaction, so nothing can interleave with it: reserve checks and counts atomically.
import { grown, HELD, holdExpiresAt } from "./holds.js";
import type { BudgetWindow, LedgerEntry, LedgerFilter, LedgerState, NewLedgerEntry, SettlementFields, SpendKind } from "./types.js";
import {
  COUNTED,
  creditKeys,
  dayOf,
  firstExceeded,
  kindOf,
  monthOf,
  resetAt,
  settledAmount,
  settlementPatch,
  windowKeys,
} from "./windows.js";

/** The part of a SQLite-backed Durable Object's storage this backend uses. */
export interface SqlLike {
  exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] };
}

/** Limits travel as decimal strings: bigint is not guaranteed across every RPC boundary. */
export type WireLimits = Partial<Record<BudgetWindow, string>>;
/** Both kinds summed per window, and the credits part apart (the x402 part is the difference). */
export type WireUsage = Record<BudgetWindow, string> & { credits: Record<BudgetWindow, string> };
/** A list filter within one tenant's object. */
export type WireFilter = Omit<LedgerFilter, "tenant" | "limit">;
export type WireReserveResult =
  | { ok: true; entry: LedgerEntry }
  | { ok: false; window: BudgetWindow; limit: string; spent: string; resetAt: string | null };
/** An entry with the position it was written at, so lists from several tenants' objects can be merged. */
export type SequencedEntry = LedgerEntry & { seq: number };

const LEDGER_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, state TEXT NOT NULL,
     hold_until INTEGER, body TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'x402', resource TEXT)`,
  `CREATE INDEX IF NOT EXISTS ledger_by_state ON ledger (state, seq)`,
  `CREATE INDEX IF NOT EXISTS ledger_holds ON ledger (hold_until) WHERE hold_until IS NOT NULL`,
  `CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
];

/** Columns added with spend kinds; a ledger table created before them gets them, its rows reading as x402. */
const LEDGER_COLUMNS: Array<[string, string]> = [
  ["kind", "TEXT NOT NULL DEFAULT 'x402'"],
  ["resource", "TEXT"],
];

const LEDGER_INDEXES = [
  `CREATE INDEX IF NOT EXISTS ledger_by_kind ON ledger (kind, seq)`,
  `CREATE INDEX IF NOT EXISTS ledger_by_resource ON ledger (resource, seq) WHERE resource IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS ledger_holds_by_kind ON ledger (kind, hold_until) WHERE hold_until IS NOT NULL`,
];

export class LedgerTables {
  constructor(private readonly sql: SqlLike) {
    for (const q of LEDGER_SCHEMA) sql.exec(q);
    const have = new Set(
      sql
        .exec("SELECT name FROM pragma_table_info('ledger')")
        .toArray()
        .map((r) => r.name as string),
    );
    for (const [name, type] of LEDGER_COLUMNS) if (!have.has(name)) sql.exec(`ALTER TABLE ledger ADD COLUMN ${name} ${type}`);
    for (const q of LEDGER_INDEXES) sql.exec(q);
  }

  private counter(key: string): bigint {
    const row = this.sql.exec("SELECT value FROM counters WHERE key = ?", key).toArray()[0];
    return row ? BigInt(row.value as string) : 0n;
  }
  private add(key: string, by: bigint) {
    this.sql.exec(
      "INSERT INTO counters (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = ?",
      key,
      by.toString(),
      (this.counter(key) + by).toString(),
    );
  }
  /** Adds `by` to every window the entry counts in: the summed counters, and the credits ones for credits. */
  private addAll(e: Pick<LedgerEntry, "tenant" | "day" | "month" | "kind">, by: bigint) {
    const keys = [windowKeys(e.tenant, e.day, e.month)];
    if (kindOf(e) === "credits") keys.push(creditKeys(e.tenant, e.day, e.month));
    for (const k of keys) {
      this.add(k.daily, by);
      this.add(k.monthly, by);
      this.add(k.total, by);
    }
  }
  private write(e: LedgerEntry) {
    const hold = HELD.has(e.state) ? holdExpiresAt(e) : null;
    this.sql.exec(
      "UPDATE ledger SET state = ?, hold_until = ?, body = ?, resource = ? WHERE id = ?",
      e.state,
      hold,
      JSON.stringify(e),
      e.resource ?? null,
      e.id,
    );
  }
  private rows(query: string, ...bindings: unknown[]): SequencedEntry[] {
    return this.sql
      .exec(query, ...bindings)
      .toArray()
      .map((r) => {
        const e = JSON.parse(r.body as string) as LedgerEntry;
        return { ...e, kind: kindOf(e), seq: r.seq as number };
      });
  }

  usage(tenant: string, now: number): WireUsage {
    const day = dayOf(now);
    const month = monthOf(now);
    const read = (k: Record<BudgetWindow, string>) => ({
      daily: this.counter(k.daily).toString(),
      monthly: this.counter(k.monthly).toString(),
      total: this.counter(k.total).toString(),
    });
    return { ...read(windowKeys(tenant, day, month)), credits: read(creditKeys(tenant, day, month)) };
  }

  get(id: string): LedgerEntry | undefined {
    const e = this.rows("SELECT seq, body FROM ledger WHERE id = ?", id)[0];
    if (!e) return undefined;
    const { seq: _seq, ...entry } = e;
    return entry;
  }

  reserve(e: NewLedgerEntry, limits: WireLimits, now: number): WireReserveResult {
    const existing = this.get(e.id);
    if (existing) return { ok: true, entry: existing };
    const day = dayOf(now);
    const month = monthOf(now);
    const usage = this.usage(e.tenant, now);
    const big = { daily: BigInt(usage.daily), monthly: BigInt(usage.monthly), total: BigInt(usage.total) };
    const lim = Object.fromEntries(Object.entries(limits).map(([w, v]) => [w, BigInt(v!)]));
    const amount = BigInt(e.amount);
    const over = firstExceeded(big, amount, lim);
    if (over) return { ok: false, window: over, limit: limits[over]!, spent: usage[over], resetAt: resetAt(over, now) };
    const entry: LedgerEntry = { ...e, kind: kindOf(e), state: "reserved", day, month, createdAt: now, updatedAt: now };
    this.addAll(entry, amount);
    this.sql.exec(
      "INSERT INTO ledger (id, state, hold_until, body, kind, resource) VALUES (?, ?, ?, ?, ?, ?)",
      e.id,
      entry.state,
      holdExpiresAt(entry),
      JSON.stringify(entry),
      entry.kind,
      entry.resource ?? null,
    );
    return { ok: true, entry };
  }

  attach(id: string, f: { resource?: string; validBefore?: number }, now: number) {
    const e = this.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    const fields = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
    this.write({ ...e, ...fields, updatedAt: now });
  }

  /** See BudgetLedger.extend; the amount travels as a (possibly negative) decimal string. */
  extend(id: string, by: { amount: string; seconds: number }, limits: WireLimits, now: number): WireReserveResult {
    const e = this.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    if (!HELD.has(e.state)) throw new Error(`ledger entry ${id} is ${e.state}, cannot be extended`);
    const next = grown(e, { amount: BigInt(by.amount), seconds: by.seconds });
    if (next.delta > 0n) {
      const k = windowKeys(e.tenant, e.day, e.month);
      const spent = { daily: this.counter(k.daily), monthly: this.counter(k.monthly), total: this.counter(k.total) };
      const lim = Object.fromEntries(Object.entries(limits).map(([w, v]) => [w, BigInt(v!)]));
      const over = firstExceeded(spent, next.delta, lim);
      if (over)
        return { ok: false, window: over, limit: limits[over]!, spent: spent[over].toString(), resetAt: resetAt(over, e.createdAt) };
    }
    this.addAll(e, next.delta);
    const entry: LedgerEntry = { ...e, amount: next.amount.toString(), validBefore: next.validBefore, updatedAt: now };
    this.write(entry);
    return { ok: true, entry };
  }

  /** `finalAmount` (a decimal string) only counts for a commit: see BudgetLedger.commit. */
  transition(id: string, to: LedgerState, now: number, patch: Partial<LedgerEntry>, finalAmount?: string) {
    const e = this.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    if (e.state === "committed" || e.state === "released") {
      if (e.state === to) return;
      throw new Error(`ledger entry ${id} is ${e.state}, cannot become ${to}`);
    }
    const reserved = BigInt(e.amount);
    if (COUNTED.has(e.state) && !COUNTED.has(to)) this.addAll(e, -reserved);
    const clean: Partial<LedgerEntry> = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    if (to === "committed") {
      const final = settledAmount(e, finalAmount === undefined ? undefined : BigInt(finalAmount));
      if (final !== reserved) {
        this.addAll(e, final - reserved);
        Object.assign(clean, { amount: final.toString(), reservedAmount: e.amount });
      }
    }
    this.write({ ...e, ...clean, state: to, updatedAt: now });
  }

  /** See BudgetLedger.resettle; amounts travel as decimal strings (the difference signed). */
  resettle(id: string, finalAmount: string, fields: SettlementFields, now: number): string {
    const e = this.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    if (e.kind !== "credits" || e.state !== "committed")
      throw new Error(`ledger entry ${id} is ${e.kind} ${e.state}, cannot be settled again`);
    const delta = BigInt(finalAmount) - BigInt(e.amount);
    this.addAll(e, delta);
    this.write({ ...e, ...settlementPatch(fields), amount: finalAmount, reservedAmount: e.reservedAmount ?? e.amount, updatedAt: now });
    return delta.toString();
  }

  list(f: WireFilter, limit: number | undefined): SequencedEntry[] {
    const where: string[] = [];
    const args: unknown[] = [];
    for (const column of ["state", "kind", "resource"] as const) {
      if (f[column] === undefined) continue;
      where.push(`${column} = ?`);
      args.push(f[column]);
    }
    const n = limit && limit > 0 ? limit : -1;
    return this.rows(
      `SELECT seq, body FROM ledger ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT ?`,
      ...args,
      n,
    );
  }

  expiredHolds(kind: SpendKind, now: number, limit: number): LedgerEntry[] {
    return this.rows(
      "SELECT seq, body FROM ledger WHERE kind = ? AND hold_until <= ? ORDER BY hold_until, seq LIMIT ?",
      kind,
      now,
      limit,
    ).map(({ seq: _s, ...e }) => e);
  }
}
