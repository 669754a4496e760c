// The TollgateState Durable Object's tables and the small pieces its RPC methods share (./durable-object.ts).
import type { SqlLike } from "./durable-ledger.js";

export interface StorageLike {
  sql: SqlLike;
  transactionSync<T>(fn: () => T): T;
  getAlarm(): Promise<number | null>;
  setAlarm(at: number): Promise<void>;
}

/**
 * The ledger's refusals (unknown id, illegal transition) travel back as values: an exception thrown across RPC is
 * logged by the runtime as uncaught, and would be indistinguishable from an outage.
 */
export function refusal(fn: () => void): { refused: string } | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof Error && err.message.startsWith("ledger entry ")) return { refused: err.message };
    throw err;
  }
}

export const SWEEP_MS = 5 * 60_000;

/** The tables but the owners' (OwnerTables makes its own). */
export const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS ledger_index (id TEXT PRIMARY KEY, tenant TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS tenants (tenant TEXT PRIMARY KEY)`,
  `CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS idem (key TEXT PRIMARY KEY, pending INTEGER NOT NULL, response TEXT, expires_at INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS tenant_records (id TEXT PRIMARY KEY, record TEXT NOT NULL, source TEXT NOT NULL, body TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS record_versions (name TEXT PRIMARY KEY, value INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS outbox (id TEXT PRIMARY KEY, message TEXT NOT NULL, next_at INTEGER NOT NULL, owner TEXT)`,
  `CREATE INDEX IF NOT EXISTS outbox_due ON outbox (next_at)`,
  `CREATE TABLE IF NOT EXISTS outbox_dead (seq INTEGER PRIMARY KEY AUTOINCREMENT, message TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS requests (seq INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS due (queue TEXT NOT NULL, id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (queue, id))`,
  `CREATE INDEX IF NOT EXISTS due_at ON due (queue, at)`,
  `CREATE TABLE IF NOT EXISTS account_slots (account TEXT NOT NULL, member TEXT NOT NULL, expires_at INTEGER NOT NULL,
     PRIMARY KEY (account, member))`,
];
