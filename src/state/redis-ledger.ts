// BudgetLedger on Redis: entries as hashes, per-tenant and per-state sorted-set indexes (score = a global sequence,
// so newest first is a ZREVRANGE) plus credits and per-resource indexes, window counters under the same keys as
// windowKeys() and creditKeys(), and one sorted set of holds per kind scored by when they expire, for the reconciler.
import type { RedisConnection } from "./redis-connection.js";
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
  constructor(private readonly r: RedisConnection) {}

  private entryKey(id: string) {
    return this.r.key("ledger", "e", id);
  }
  private idx(state: LedgerState | "all", tenant?: string) {
    return tenant === undefined ? this.r.key("ledger", "idx", state, "g") : this.r.key("ledger", "idx", state, "t", tenant);
  }
  /** Credits entries of a tenant (or all), every state. */
  private creditsIdx(tenant?: string) {
    return tenant === undefined ? this.r.key("ledger", "idx", "credits", "g") : this.r.key("ledger", "idx", "credits", "t", tenant);
  }
  /** What the scripts prepend to build index keys they learn of only from the entry (state and resource indexes). */
  private idxPrefix() {
    return `${this.r.key("ledger", "idx")}:`;
  }
  private resourceIdx(resource: string) {
    return this.r.key("ledger", "idx", "res", resource);
  }
  /** x402 holds keep the key they had before kinds existed. */
  private holdsOf(kind: SpendKind) {
    return kind === "credits" ? this.r.key("ledger", "creditholds") : this.r.key("ledger", "holds");
  }
  private prefixed(k: { daily: string; monthly: string; total: string }) {
    const at = (name: string) => this.r.keyIn("ledger", name);
    return { daily: at(k.daily), monthly: at(k.monthly), total: at(k.total) };
  }
  private windowKeys(tenant: string, day: string, month: string) {
    return this.prefixed(windowKeys(tenant, day, month));
  }

  async reserve(e: NewLedgerEntry, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    const amount = decimal("amount", e.amount);
    const lim = WINDOWS.map((w) => (limits[w] === undefined ? "" : decimal(`${w} limit`, limits[w]!)));
    const day = dayOf(now);
    const month = monthOf(now);
    const kind = kindOf(e);
    const entry: LedgerEntry = { ...e, kind, amount, state: "reserved", day, month, createdAt: now, updatedAt: now };
    const k = this.windowKeys(e.tenant, day, month);
    const c = this.prefixed(creditKeys(e.tenant, day, month));
    const keys = [
      this.entryKey(e.id),
      k.daily,
      k.monthly,
      k.total,
      this.r.key("ledger", "seq"),
      this.idx("all", e.tenant),
      this.idx("reserved", e.tenant),
      this.idx("all"),
      this.idx("reserved"),
      this.holdsOf(kind),
      c.daily,
      c.monthly,
      c.total,
      this.creditsIdx(e.tenant),
      this.creditsIdx(),
      this.resourceIdx(e.resource ?? ""),
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
    const res = await this.r.confirmed<[number, number?, string?]>((p) => p.tgReserve(...keys, ...args));
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
    try {
      await this.r.confirmed((p) =>
        p.tgTransition(
          this.entryKey(id),
          this.holdsOf("x402"),
          this.holdsOf("credits"),
          this.idxPrefix(),
          to,
          now,
          id,
          final,
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

  async signed(id: string, f: { nonce: string; validBefore: number; payer: string }, now: number) {
    const holdUntil = holdExpiresAt({ validBefore: f.validBefore, createdAt: now });
    try {
      await this.r.confirmed((p) =>
        p.tgSigned(this.entryKey(id), this.holdsOf("x402"), this.holdsOf("credits"), id, now, f.nonce, f.validBefore, f.payer, holdUntil),
      );
    } catch (err) {
      if (/\bTG_NOT_FOUND/.test((err as Error)?.message ?? "")) throw new Error(`ledger entry ${id} not found`);
      throw err;
    }
  }
  async attach(id: string, f: { resource?: string; validBefore?: number }, now: number) {
    const holdUntil = f.validBefore === undefined ? "" : holdExpiresAt({ validBefore: f.validBefore, createdAt: now });
    try {
      await this.r.confirmed((p) =>
        p.tgAttach(
          this.entryKey(id),
          this.holdsOf("x402"),
          this.holdsOf("credits"),
          this.idxPrefix(),
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
    let res: [number, number?, string?, string?];
    try {
      res = await this.r.confirmed<[number, number?, string?, string?]>((p) =>
        p.tgExtend(
          this.entryKey(id),
          this.holdsOf("x402"),
          this.holdsOf("credits"),
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
    try {
      const delta = await this.r.run(() => this.r.client.tgResettle(this.entryKey(id), final, now, ...fieldsOf(settlementPatch(fields))));
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
    return toEntry(await this.r.run(() => this.r.client.hgetall(this.entryKey(id))));
  }

  private async load(ids: string[]): Promise<LedgerEntry[]> {
    if (ids.length === 0) return [];
    const pipe = this.r.client.pipeline();
    for (const id of ids) pipe.hgetall(this.entryKey(id));
    const replies = (await this.r.run(() => pipe.exec())) ?? [];
    const out: LedgerEntry[] = [];
    for (const [err, h] of replies) {
      if (err) throw err;
      const e = toEntry(h as Record<string, string>);
      if (e) out.push(e);
    }
    return out;
  }

  /**
   * Newest first. Reads the narrowest index for the filter (a resource's, the credits one, or the state/tenant one)
   * and checks the rest of the filter entry by entry, a page at a time.
   */
  async list(f: LedgerFilter) {
    let index: string;
    if (f.resource !== undefined) index = this.resourceIdx(f.resource);
    else if (f.kind === "credits" && f.state === undefined) index = this.creditsIdx(f.tenant);
    else index = this.idx(f.state ?? "all", f.tenant);
    const exact = f.resource === undefined && (f.kind === undefined || (f.kind === "credits" && f.state === undefined));
    if (exact) {
      const stop = f.limit ? f.limit - 1 : -1;
      return this.load(await this.r.run(() => this.r.client.zrevrange(index, 0, stop)));
    }
    const out: LedgerEntry[] = [];
    const page = Math.max(f.limit ?? 0, 200);
    for (let start = 0; ; start += page) {
      const ids = await this.r.run(() => this.r.client.zrevrange(index, start, start + page - 1));
      for (const e of await this.load(ids)) {
        if (!matches(e, f)) continue;
        out.push(e);
        if (f.limit && out.length >= f.limit) return out;
      }
      if (ids.length < page) return out;
    }
  }

  async usage(tenant: string, now: number): Promise<Usage> {
    const day = dayOf(now);
    const month = monthOf(now);
    const k = this.windowKeys(tenant, day, month);
    const c = this.prefixed(creditKeys(tenant, day, month));
    const v = await this.r.run(() => this.r.client.mget(k.daily, k.monthly, k.total, c.daily, c.monthly, c.total));
    const [d, m, t, cd, cm, ct] = v.map((x) => BigInt(x ?? "0"));
    return usageOf({ daily: d, monthly: m, total: t }, { daily: cd, monthly: cm, total: ct });
  }

  private async holds(kind: SpendKind, now: number, limit: number) {
    const ids = await this.r.run(() => this.r.client.zrangebyscore(this.holdsOf(kind), "-inf", now, "LIMIT", 0, limit));
    return (await this.load(ids)).filter((e) => HELD.has(e.state) && e.kind === kind);
  }
  expiredHolds(now: number, limit: number) {
    return this.holds("x402", now, limit);
  }
  expiredCreditHolds(now: number, limit: number) {
    return this.holds("credits", now, limit);
  }
}
