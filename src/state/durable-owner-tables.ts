// The ownership tables of the TollgateState Durable Object (durable-object.ts): which tenant owns a resource (in its
// res:<kind>:<id> object), a tenant's resources newest first (own:<tenant>), and the previous layout's one "ownership"
// object read out in batches. Synchronous SQL; what must not interleave runs in the object's transaction.
import type { SqlLike } from "./durable-ledger.js";
import type { OwnedRecord, ResourceKind, ResourceOwner } from "./types.js";

/** An ownership row as stored (see ownRow). */
export interface OwnerRow {
  kind: ResourceKind;
  id: string;
  tenant: string;
  active: number;
  seq: number;
  status: string | null;
  ended_at: number | null;
}

export class OwnerTables {
  constructor(
    private readonly sql: SqlLike,
    private readonly tx: <T>(fn: () => T) => T,
  ) {
    this.sql.exec(`CREATE TABLE IF NOT EXISTS owners (kind TEXT NOT NULL, id TEXT NOT NULL, tenant TEXT NOT NULL,
      active INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (kind, id))`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS owners_by_tenant ON owners (kind, tenant, seq)");
    // Columns added after the table first shipped: the last known status and when the resource ended.
    const cols = new Set(this.rows("PRAGMA table_info(owners)").map((r) => r.name as string));
    if (!cols.has("status")) this.sql.exec("ALTER TABLE owners ADD COLUMN status TEXT");
    if (!cols.has("ended_at")) this.sql.exec("ALTER TABLE owners ADD COLUMN ended_at INTEGER");
  }

  private rows(query: string, ...bindings: unknown[]) {
    return this.sql.exec(query, ...bindings).toArray();
  }

  /** `cutoff` (epoch ms): a record that ended at or before it is past its retention, as if never claimed. */
  ownClaim(kind: ResourceKind, id: string, tenant: string, cutoff = 0): boolean {
    return this.tx(() => {
      this.sql.exec("DELETE FROM owners WHERE kind = ? AND id = ? AND ended_at IS NOT NULL AND ended_at <= ?", kind, id, cutoff);
      const had = this.rows("SELECT tenant FROM owners WHERE kind = ? AND id = ?", kind, id)[0]?.tenant as string | undefined;
      if (had !== undefined && had !== tenant) return false;
      // Never below the clock (ms): claims made in a tenant's own object after an upgrade sort above the rows copied in
      // later from the previous layout's one object (whose sequences count from 1).
      const seq = Math.max(((this.rows("SELECT MAX(seq) AS s FROM owners")[0]?.s as number | null) ?? 0) + 1, Date.now());
      this.sql.exec(
        "INSERT INTO owners (kind, id, tenant, active, seq) VALUES (?, ?, ?, 1, ?) ON CONFLICT (kind, id) DO UPDATE SET tenant = ?, active = 1, seq = ?, ended_at = NULL",
        kind,
        id,
        tenant,
        seq,
        tenant,
        seq,
      );
      return true;
    });
  }
  /**
   * A tenant object's listing of a claim counted against `limit` of the tenant's active resources of the kind: nothing
   * is written when it holds `limit` others (claimed false). One synchronous step: no other call interleaves.
   */
  ownClaimWithin(kind: ResourceKind, id: string, tenant: string, cutoff: number, limit: number): { claimed: boolean; active: number } {
    const row = this.rows("SELECT tenant, active FROM owners WHERE kind = ? AND id = ?", kind, id)[0];
    const counted = row?.tenant === tenant && row?.active === 1;
    const active = this.ownActiveCount(kind, tenant);
    if (!counted && active >= limit) return { claimed: false, active };
    const claimed = this.ownClaim(kind, id, tenant, cutoff);
    return { claimed, active: this.ownActiveCount(kind, tenant) };
  }
  /** Forgets one resource's row: a tenant's listing of a claim its resource's object refused. */
  ownDrop(kind: ResourceKind, id: string) {
    this.sql.exec("DELETE FROM owners WHERE kind = ? AND id = ?", kind, id);
  }
  /** Forgets resources that ended before `cutoff` (epoch ms): past their retention. */
  private ownForget(cutoff: number) {
    this.sql.exec("DELETE FROM owners WHERE ended_at IS NOT NULL AND ended_at <= ?", cutoff);
  }
  ownOwner(kind: ResourceKind, id: string, cutoff = 0): string | undefined {
    return this.rows("SELECT tenant FROM owners WHERE kind = ? AND id = ? AND (ended_at IS NULL OR ended_at > ?)", kind, id, cutoff)[0]
      ?.tenant as string | undefined;
  }
  /** The owner and active flag of a resource not past its retention (one read of its row). */
  ownOwnerRecord(kind: ResourceKind, id: string, cutoff = 0): ResourceOwner | undefined {
    const row = this.rows(
      "SELECT tenant, active FROM owners WHERE kind = ? AND id = ? AND (ended_at IS NULL OR ended_at > ?)",
      kind,
      id,
      cutoff,
    )[0];
    return row ? { tenant: row.tenant as string, active: row.active === 1 } : undefined;
  }
  ownRecords(kind: ResourceKind, tenant: string, cutoff = 0): OwnedRecord[] {
    this.ownForget(cutoff);
    return this.rows("SELECT id, active, status FROM owners WHERE kind = ? AND tenant = ? ORDER BY seq DESC", kind, tenant).map((r) => {
      const base = { id: r.id as string, active: r.active === 1 };
      return r.status === null || r.status === undefined ? base : { ...base, status: r.status as string };
    });
  }
  ownList(kind: ResourceKind, tenant: string, cutoff = 0): string[] {
    return this.ownRecords(kind, tenant, cutoff).map((r) => r.id);
  }
  ownNoteStatus(kind: ResourceKind, id: string, status: string) {
    this.sql.exec("UPDATE owners SET status = ? WHERE kind = ? AND id = ?", status, kind, id);
  }
  ownSetActive(kind: ResourceKind, id: string, active: boolean, now = Date.now()) {
    this.tx(() => {
      // A change of liveness means the status changed: the last one seen no longer holds.
      this.sql.exec("UPDATE owners SET status = NULL WHERE kind = ? AND id = ? AND active <> ?", kind, id, active ? 1 : 0);
      this.sql.exec("UPDATE owners SET active = ?, ended_at = ? WHERE kind = ? AND id = ?", active ? 1 : 0, active ? null : now, kind, id);
    });
  }
  /**
   * One resource's whole row: what moves it from the fleet-wide "ownership" object of the previous layout to its
   * own object and its tenant's (see ownImport).
   */
  ownRow(kind: ResourceKind, id: string): OwnerRow | undefined {
    return this.rows(
      "SELECT kind, id, tenant, active, seq, status, ended_at FROM owners WHERE kind = ? AND id = ?",
      kind,
      id,
    )[0] as unknown as OwnerRow | undefined;
  }
  /** Rows after `afterSeq` in sequence (of one tenant and kind when given): the previous layout read out in batches. */
  ownExport(afterSeq: number, limit: number, tenant?: string, kind?: ResourceKind): OwnerRow[] {
    const q = "SELECT kind, id, tenant, active, seq, status, ended_at FROM owners WHERE seq > ?";
    const rows =
      tenant === undefined
        ? this.rows(`${q} ORDER BY seq LIMIT ?`, afterSeq, limit)
        : this.rows(`${q} AND tenant = ? AND kind = ? ORDER BY seq LIMIT ?`, afterSeq, tenant, kind, limit);
    return rows as unknown as OwnerRow[];
  }
  /** Rows copied in as they were; a row this object has already is kept (it is the newer: written here since). */
  ownImport(rows: OwnerRow[]) {
    this.tx(() => {
      for (const r of rows)
        this.sql.exec(
          "INSERT INTO owners (kind, id, tenant, active, seq, status, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kind, id) DO NOTHING",
          r.kind,
          r.id,
          r.tenant,
          r.active,
          r.seq,
          r.status ?? null,
          r.ended_at ?? null,
        );
    });
  }
  /** A small named value (the previous layout's migration cursor and marker). */
  metaGet(name: string): string | undefined {
    return this.rows("SELECT value FROM meta WHERE name = ?", name)[0]?.value as string | undefined;
  }
  metaSet(name: string, value: string) {
    this.sql.exec("INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = ?", name, value, value);
  }
  /**
   * The previous layout's "ownership" object: "done" once every row was copied out (or it never had any), else the
   * sequence the copy has reached.
   */
  ownLegacyState(): { done: boolean; cursor: number } {
    return this.tx(() => {
      if (this.metaGet("owners-migrated") === "1") return { done: true, cursor: 0 };
      if (this.rows("SELECT 1 FROM owners LIMIT 1").length === 0) {
        this.metaSet("owners-migrated", "1");
        return { done: true, cursor: 0 };
      }
      return { done: false, cursor: Number(this.metaGet("owners-cursor") ?? 0) };
    });
  }
  ownActiveCount(kind: ResourceKind, tenant: string): number {
    return this.rows("SELECT COUNT(*) AS n FROM owners WHERE kind = ? AND tenant = ? AND active = 1", kind, tenant)[0].n as number;
  }
}
