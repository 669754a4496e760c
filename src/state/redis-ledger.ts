// BudgetLedger on Redis: entries as hashes, per-tenant and per-state sorted-set indexes (score = a sequence, so newest
// first is a ZREVRANGE) plus credits and per-resource indexes, window counters under the same keys as windowKeys() and
// creditKeys(), and sorted sets of holds per kind scored by when they expire, for the reconciler.
//
// Two layouts (docs/state-layout.md). The shared layout (one Redis, or Sentinel): one sequence, fleet-wide indexes and
// holds beside the per-tenant ones. The tenant layout (a Cluster, or `hashTags`): every key of a tenant's ledger
// carries the tenant as hash tag ("{t:<tenant>}"), so each script touches one slot and tenants spread over the
// primaries; the sequence, indexes and holds are per tenant, and the fleet views (a list across tenants, the
// reconciler's expired holds) fan out over the set of tenants that ever reserved. Calls that name only an entry id
// find its tenant through a per-id key written beside the reservation (remembered per instance).
import type { RedisConnection } from "./redis-connection.js";
import { bounded, FAN_OUT } from "./fan-out.js";
import { ledgerIdKey, ledgerTenantsKey, refuseUnmigrated } from "./redis-migrate.js";
import { HELD, holdExpiresAt, matches, UNSIGNED_HOLD_MS } from "./holds.js";
import type {
  BudgetLedger,
  BudgetLimits,
  BudgetWindow,
  HoldGrowth,
  LedgerEntry,
  LedgerFilter,
  LedgerState,
  NewLedgerEntry,
  ReserveResult,
  SettlementFields,
  SpendKind,
  Usage,
} from "./types.js";
import { creditKeys, dayOf, kindOf, monthOf, resetAt, settlementPatch, usageOf, windowKeys } from "./windows.js";

const WINDOWS: BudgetWindow[] = ["daily", "monthly", "total"];
/** Day counters outlive their day, month counters their month, long enough for late releases; totals never expire. */
const DAY_TTL_MS = 40 * 24 * 3_600_000;
const MONTH_TTL_MS = 400 * 24 * 3_600_000;
const NUMERIC = new Set(["validBefore", "createdAt", "updatedAt"]);
const INTERNAL = new Set(["seq", "kd", "km", "kt", "cd", "cm", "ct"]);

function toEntry(h: Record<string, string>): LedgerEntry | undefined {
  if (!h?.id) return undefined;
  const e: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h)) {
    if (INTERNAL.has(k)) continue;
    e[k] = NUMERIC.has(k) ? Number(v) : v;
  }
  e.kind = kindOf(e); // entries written before kinds existed
  return e as unknown as LedgerEntry;
}

function fieldsOf(o: object): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null) out.push(k, String(v));
  return out;
}

function decimal(name: string, v: bigint | string): string {
  const s = v.toString();
  if (!/^(0|[1-9]\d*)$/.test(s)) throw new RangeError(`${name} must be a non-negative integer in atomic units, got "${s}"`);
  return s;
}

export class RedisLedger implements BudgetLedger {
  /** The tenant layout: keys per tenant, no fleet-wide index. */
  private readonly perTenant: boolean;
  /** id -> tenant (tenant layout): an entry's tenant never changes, so what was learnt once holds. */
  private readonly tenants = new Map<string, string>();
  /** Tenants this instance knows are in the set of tenants (tenant layout). */
  private readonly listed = new Set<string>();

  constructor(private readonly r: RedisConnection) {
    this.perTenant = r.ledgerPerTenant;
  }

  /** A key of the tenant's ledger group: hash-tagged by tenant in the tenant layout. */
  private k(tenant: string, ...parts: string[]) {
    return this.perTenant ? this.r.tenantKey(tenant, "ledger", ...parts) : this.r.key("ledger", ...parts);
  }
  private entryKey(id: string, tenant: string) {
    return this.k(tenant, "e", id);
  }
  private idKey(id: string) {
    return ledgerIdKey(this.r, id);
  }
  private tenantsKey() {
    return ledgerTenantsKey(this.r);
  }
  /** Settles once per instance that no shared-layout ledger waits to be migrated (the tenant layout only). */
  private layoutChecked: Promise<void> | undefined;
  private async layout(): Promise<void> {
    if (!this.perTenant) return;
    this.layoutChecked ??= refuseUnmigrated(this.r).catch((err) => {
      this.layoutChecked = undefined; // asked again next time
      throw err;
    });
    await this.layoutChecked;
  }
  /** A tenant's index; the fleet-wide one (`tenant` undefined) exists only in the shared layout. */
  private idx(state: LedgerState | "all", tenant?: string) {
    return tenant === undefined ? this.r.key("ledger", "idx", state, "g") : this.k(tenant, "idx", state, "t", tenant);
  }
  /** Credits entries of a tenant (or all, shared layout), every state. */
  private creditsIdx(tenant?: string) {
    return tenant === undefined ? this.r.key("ledger", "idx", "credits", "g") : this.k(tenant, "idx", "credits", "t", tenant);
  }
  /** What the scripts prepend to build index keys they learn of only from the entry (state and resource indexes). */
  private idxPrefix(tenant: string) {
    return `${this.k(tenant, "idx")}:`;
  }
  private resourceIdx(resource: string, tenant: string) {
    return this.k(tenant, "idx", "res", resource);
  }
  /** x402 holds keep the key they had before kinds existed. Per tenant in the tenant layout. */
  private holdsOf(kind: SpendKind, tenant: string) {
    return this.k(tenant, kind === "credits" ? "creditholds" : "holds");
  }
  private prefixed(tenant: string, k: { daily: string; monthly: string; total: string }) {
    const at = (name: string) => (this.perTenant ? this.r.tenantKey(tenant, name) : this.r.keyIn("ledger", name));
    return { daily: at(k.daily), monthly: at(k.monthly), total: at(k.total) };
  }
  private windowKeys(tenant: string, day: string, month: string) {
    return this.prefixed(tenant, windowKeys(tenant, day, month));
  }

  private remember(id: string, tenant: string) {
    if (!this.perTenant) return;
    if (this.tenants.size >= 50_000) this.tenants.clear();
    this.tenants.set(id, tenant);
  }
  /** Every tenant that ever reserved (tenant layout). */
  async allTenants(): Promise<string[]> {
    await this.layout();
    return (await this.r.run(() => this.r.client.smembers(this.tenantsKey()))).sort();
  }
  /**
   * The tenant of an entry known by its id: "" in the shared layout (keys do not name it). In the tenant layout, from
   * memory, else the id's key. Undefined when the id is unknown: one read, never a search over the tenants (callers
   * look up ids that often do not exist, e.g. a settlement's cap entry). An entry whose id key is missing (the key's
   * write failed beside a reservation, which then failed closed) is still reached through the fleet views: the
   * reconciler's expired holds load it from its tenant's shard, and this instance remembers its tenant from there.
   */
  private async tenantOf(id: string): Promise<string | undefined> {
    if (!this.perTenant) return "";
    await this.layout();
    const known = this.tenants.get(id);
    if (known !== undefined) return known;
    const t = await this.r.run(() => this.r.client.get(this.idKey(id)));
    if (t === null) return undefined;
    this.remember(id, t);
    return t;
  }
  private async tenantOrMissing(id: string): Promise<string> {
    const t = await this.tenantOf(id);
    if (t === undefined) throw new Error(`ledger entry ${id} not found`);
    return t;
  }

  async reserve(e: NewLedgerEntry, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    const amount = decimal("amount", e.amount);
    const lim = WINDOWS.map((w) => (limits[w] === undefined ? "" : decimal(`${w} limit`, limits[w]!)));
    const day = dayOf(now);
    const month = monthOf(now);
    const kind = kindOf(e);
    const entry: LedgerEntry = { ...e, kind, amount, state: "reserved", day, month, createdAt: now, updatedAt: now };
    const t = e.tenant;
    const k = this.windowKeys(t, day, month);
    const c = this.prefixed(t, creditKeys(t, day, month));
    // The tenant layout has no fleet-wide index: its own keys are given in their place (a second ZADD of the same
    // member and score changes nothing).
    const g = (state: "all" | "reserved") => (this.perTenant ? this.idx(state, t) : this.idx(state));
    const keys = [
      this.entryKey(e.id, t),
      k.daily,
      k.monthly,
      k.total,
      this.k(t, "seq"),
      this.idx("all", t),
      this.idx("reserved", t),
      g("all"),
      g("reserved"),
      this.holdsOf(kind, t),
      c.daily,
      c.monthly,
      c.total,
      this.creditsIdx(t),
      this.perTenant ? this.creditsIdx(t) : this.creditsIdx(),
      this.resourceIdx(e.resource ?? "", t),
    ];
    const args = [
      amount,
      ...lim,
      holdExpiresAt(entry),
      DAY_TTL_MS,
      MONTH_TTL_MS,
      e.id,
      kind === "credits" ? "1" : "",
      e.resource ? "1" : "",
      ...fieldsOf(entry),
    ];
    let res: [number, number?, string?];
    if (this.perTenant) {
      await this.layout();
      // The tenant joins the set the fleet views read before its first entry can exist (once per instance).
      if (!this.listed.has(t)) {
        await this.r.run(() => this.r.client.sadd(this.tenantsKey(), t));
        this.listed.add(t);
      }
      // The id key beside the reservation, in the same round trip (its own slot). Both must land: a reservation whose
      // id key failed fails closed like one that got no answer (nothing is signed on it; the reconciler releases it).
      const [reserved] = await Promise.all([
        this.r.confirmed<[number, number?, string?]>((p) => p.tgReserve(...keys, ...args)),
        this.r.run(() => this.r.client.set(this.idKey(e.id), t, "NX")),
      ]);
      res = reserved;
      this.remember(e.id, t);
    } else res = await this.r.confirmed<[number, number?, string?]>((p) => p.tgReserve(...keys, ...args));
    if (res[0] === 1) return { ok: true, entry };
    if (res[0] === 2) {
      const existing = await this.get(e.id);
      if (existing) return { ok: true, entry: existing };
      throw new Error(`ledger entry ${e.id} vanished during a retried reserve`);
    }
    const window = WINDOWS[res[1]! - 1];
    return { ok: false, window, limit: limits[window]!, spent: BigInt(res[2] ?? "0"), resetAt: resetAt(window, now) };
  }

  private async transition(id: string, to: LedgerState, now: number, patch: Record<string, string | undefined>, finalAmount?: bigint) {
    const final = finalAmount === undefined ? "" : decimal("final amount", finalAmount);
    const t = await this.tenantOrMissing(id);
    try {
      await this.r.confirmed((p) =>
        p.tgTransition(
          this.entryKey(id, t),
          this.holdsOf("x402", t),
          this.holdsOf("credits", t),
          this.idxPrefix(t),
          to,
          now,
          id,
          final,
          this.perTenant ? "" : "1",
          ...fieldsOf(patch),
        ),
      );
    } catch (err) {
      const m = /\bTG_(NOT_FOUND|ILLEGAL)(?: (\w+))?/.exec((err as Error)?.message ?? "");
      if (m?.[1] === "NOT_FOUND") throw new Error(`ledger entry ${id} not found`);
      if (m?.[1] === "ILLEGAL") throw new Error(`ledger entry ${id} is ${m[2]}, cannot become ${to}`);
      throw err;
    }
  }

  async attach(id: string, f: { resource?: string; validBefore?: number }, now: number) {
    const holdUntil = f.validBefore === undefined ? "" : holdExpiresAt({ validBefore: f.validBefore, createdAt: now });
    const t = await this.tenantOrMissing(id);
    try {
      await this.r.confirmed((p) =>
        p.tgAttach(
          this.entryKey(id, t),
          this.holdsOf("x402", t),
          this.holdsOf("credits", t),
          this.idxPrefix(t),
          id,
          now,
          f.resource ?? "",
          f.validBefore ?? "",
          holdUntil,
        ),
      );
    } catch (err) {
      if (/\bTG_NOT_FOUND/.test((err as Error)?.message ?? "")) throw new Error(`ledger entry ${id} not found`);
      throw err;
    }
  }
  async extend(id: string, by: HoldGrowth, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    if (!Number.isSafeInteger(by.seconds)) throw new RangeError(`seconds must be a whole number, got ${by.seconds}`);
    const lim = WINDOWS.map((w) => (limits[w] === undefined ? "" : decimal(`${w} limit`, limits[w]!)));
    const sign = by.amount < 0n ? "-" : "+";
    const amount = decimal("amount", by.amount < 0n ? -by.amount : by.amount);
    const t = await this.tenantOrMissing(id);
    let res: [number, number?, string?, string?];
    try {
      res = await this.r.confirmed<[number, number?, string?, string?]>((p) =>
        p.tgExtend(
          this.entryKey(id, t),
          this.holdsOf("x402", t),
          this.holdsOf("credits", t),
          sign,
          amount,
          ...lim,
          now,
          by.seconds,
          UNSIGNED_HOLD_MS,
          id,
        ),
      );
    } catch (err) {
      const m = /\bTG_(NOT_FOUND|ILLEGAL)(?: (\w+))?/.exec((err as Error)?.message ?? "");
      if (m?.[1] === "NOT_FOUND") throw new Error(`ledger entry ${id} not found`);
      if (m?.[1] === "ILLEGAL") throw new Error(`ledger entry ${id} is ${m[2]}, cannot be extended`);
      throw err;
    }
    if (res[0] === 1) {
      const entry = await this.get(id);
      if (entry) return { ok: true, entry };
      throw new Error(`ledger entry ${id} not found`);
    }
    const window = WINDOWS[res[1]! - 1];
    return { ok: false, window, limit: limits[window]!, spent: BigInt(res[2] ?? "0"), resetAt: resetAt(window, Number(res[3])) };
  }
  commit(id: string, transaction: string | undefined, now: number, finalAmount?: bigint, fields?: SettlementFields) {
    if (finalAmount !== undefined && finalAmount < 0n)
      return Promise.reject(new RangeError(`final amount must not be negative, got ${finalAmount}`));
    return this.transition(id, "committed", now, { ...settlementPatch(fields), transaction }, finalAmount);
  }
  async resettle(id: string, finalAmount: bigint, fields: SettlementFields, now: number): Promise<bigint> {
    const final = decimal("final amount", finalAmount);
    const t = await this.tenantOrMissing(id);
    try {
      const delta = await this.r.run(() =>
        this.r.client.tgResettle(this.entryKey(id, t), final, now, ...fieldsOf(settlementPatch(fields))),
      );
      return BigInt(String(delta));
    } catch (err) {
      const m = /\bTG_(NOT_FOUND|ILLEGAL)(?: (\w+))?/.exec((err as Error)?.message ?? "");
      if (m?.[1] === "NOT_FOUND") throw new Error(`ledger entry ${id} not found`);
      if (m?.[1] === "ILLEGAL") throw new Error(`ledger entry ${id} is ${m[2]}, cannot be settled again`);
      throw err;
    }
  }
  release(id: string, reason: string, now: number) {
    return this.transition(id, "released", now, { reason });
  }
  markUncertain(id: string, reason: string, now: number) {
    return this.transition(id, "uncertain", now, { reason });
  }

  async get(id: string) {
    const t = await this.tenantOf(id);
    if (t === undefined) return undefined;
    return toEntry(await this.r.run(() => this.r.client.hgetall(this.entryKey(id, t))));
  }

  /** Entries by id, of one tenant in the tenant layout (a pipeline stays on the tenant's slot). */
  private async load(ids: string[], tenant: string): Promise<LedgerEntry[]> {
    if (ids.length === 0) return [];
    const pipe = this.r.client.pipeline();
    for (const id of ids) pipe.hgetall(this.entryKey(id, tenant));
    const replies = (await this.r.run(() => pipe.exec())) ?? [];
    const out: LedgerEntry[] = [];
    for (const [err, h] of replies) {
      if (err) throw err;
      const e = toEntry(h as Record<string, string>);
      if (e) {
        this.remember(e.id, e.tenant);
        out.push(e);
      }
    }
    return out;
  }

  /**
   * Newest first. Reads the narrowest index for the filter (a resource's, the credits one, or the state/tenant one)
   * and checks the rest of the filter entry by entry, a page at a time. In the tenant layout a list across tenants
   * reads each tenant's (bounded concurrency) and merges them.
   */
  async list(f: LedgerFilter): Promise<LedgerEntry[]> {
    if (this.perTenant && f.tenant === undefined) {
      const lists = await bounded(await this.allTenants(), FAN_OUT, (tenant) => this.listIn({ ...f, tenant }, tenant));
      const merged = lists.flat().sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      return f.limit ? merged.slice(0, f.limit) : merged;
    }
    await this.layout();
    return this.listIn(f, f.tenant ?? "");
  }

  /** `tenant`: the filter's ("" in the shared layout for a list across tenants). */
  private async listIn(f: LedgerFilter, tenant: string): Promise<LedgerEntry[]> {
    let index: string;
    if (f.resource !== undefined) index = this.resourceIdx(f.resource, tenant);
    else if (f.kind === "credits" && f.state === undefined) index = this.creditsIdx(f.tenant);
    else index = this.idx(f.state ?? "all", f.tenant);
    const exact = f.resource === undefined && (f.kind === undefined || (f.kind === "credits" && f.state === undefined));
    if (exact) {
      const stop = f.limit ? f.limit - 1 : -1;
      return this.load(await this.r.run(() => this.r.client.zrevrange(index, 0, stop)), tenant);
    }
    const out: LedgerEntry[] = [];
    const page = Math.max(f.limit ?? 0, 200);
    for (let start = 0; ; start += page) {
      const ids = await this.r.run(() => this.r.client.zrevrange(index, start, start + page - 1));
      for (const e of await this.load(ids, tenant)) {
        if (!matches(e, f)) continue;
        out.push(e);
        if (f.limit && out.length >= f.limit) return out;
      }
      if (ids.length < page) return out;
    }
  }

  async usage(tenant: string, now: number): Promise<Usage> {
    await this.layout();
    const day = dayOf(now);
    const month = monthOf(now);
    const k = this.windowKeys(tenant, day, month);
    const c = this.prefixed(tenant, creditKeys(tenant, day, month));
    const v = await this.r.run(() => this.r.client.mget(k.daily, k.monthly, k.total, c.daily, c.monthly, c.total));
    const [d, m, t, cd, cm, ct] = v.map((x) => BigInt(x ?? "0"));
    return usageOf({ daily: d, monthly: m, total: t }, { daily: cd, monthly: cm, total: ct });
  }

  private async holdsIn(kind: SpendKind, tenant: string, now: number, limit: number) {
    const ids = await this.r.run(() => this.r.client.zrangebyscore(this.holdsOf(kind, tenant), "-inf", now, "LIMIT", 0, limit));
    return (await this.load(ids, tenant)).filter((e) => HELD.has(e.state) && e.kind === kind);
  }
  /** In the tenant layout each tenant's holds are asked (bounded concurrency), merged soonest-expired first. */
  private async holds(kind: SpendKind, now: number, limit: number) {
    if (!this.perTenant) return this.holdsIn(kind, "", now, limit);
    await this.layout();
    const lists = await bounded(await this.allTenants(), FAN_OUT, (t) => this.holdsIn(kind, t, now, limit));
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
