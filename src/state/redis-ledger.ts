// BudgetLedger on Redis: entries as hashes, per-tenant and per-state sorted-set indexes (score = a global sequence,
// so newest first is a ZREVRANGE), window counters under the same keys as windowKeys(), and a sorted set of holds
// scored by when they expire, for the reconciler.
import type { RedisConnection } from "./redis.js";
import { HELD, holdExpiresAt } from "./holds.js";
import type { BudgetLedger, BudgetLimits, BudgetWindow, LedgerEntry, LedgerState, NewLedgerEntry, ReserveResult, Usage } from "./types.js";
import { dayOf, monthOf, resetAt, windowKeys } from "./windows.js";

const WINDOWS: BudgetWindow[] = ["daily", "monthly", "total"];
/** Day counters outlive their day, month counters their month, long enough for late releases; totals never expire. */
const DAY_TTL_MS = 40 * 24 * 3_600_000;
const MONTH_TTL_MS = 400 * 24 * 3_600_000;
const NUMERIC = new Set(["validBefore", "createdAt", "updatedAt"]);
const INTERNAL = new Set(["seq", "kd", "km", "kt"]);

function toEntry(h: Record<string, string>): LedgerEntry | undefined {
  if (!h || !h.id) return undefined;
  const e: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h)) {
    if (INTERNAL.has(k)) continue;
    e[k] = NUMERIC.has(k) ? Number(v) : v;
  }
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
  private get holds() {
    return this.r.key("ledger", "holds");
  }
  private windowKeys(tenant: string, day: string, month: string) {
    const k = windowKeys(tenant, day, month);
    return { daily: this.r.prefix + k.daily, monthly: this.r.prefix + k.monthly, total: this.r.prefix + k.total };
  }

  async reserve(e: NewLedgerEntry, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    const amount = decimal("amount", e.amount);
    const lim = WINDOWS.map((w) => (limits[w] === undefined ? "" : decimal(`${w} limit`, limits[w]!)));
    const day = dayOf(now);
    const month = monthOf(now);
    const entry: LedgerEntry = { ...e, amount, state: "reserved", day, month, createdAt: now, updatedAt: now };
    const k = this.windowKeys(e.tenant, day, month);
    const keys = [
      this.entryKey(e.id), k.daily, k.monthly, k.total, this.r.key("ledger", "seq"),
      this.idx("all", e.tenant), this.idx("reserved", e.tenant), this.idx("all"), this.idx("reserved"), this.holds,
    ];
    const args = [amount, ...lim, holdExpiresAt(entry), DAY_TTL_MS, MONTH_TTL_MS, e.id, ...fieldsOf(entry)];
    const res = (await this.r.run(() => this.r.client.tgReserve(...keys, ...args))) as [number, number?, string?];
    if (res[0] === 1) return { ok: true, entry };
    if (res[0] === 2) {
      const existing = await this.get(e.id);
      if (existing) return { ok: true, entry: existing };
      throw new Error(`ledger entry ${e.id} vanished during a retried reserve`);
    }
    const window = WINDOWS[res[1]! - 1];
    return { ok: false, window, limit: limits[window]!, spent: BigInt(res[2] ?? "0"), resetAt: resetAt(window, now) };
  }

  private async transition(id: string, to: LedgerState, now: number, patch: Record<string, string | undefined>) {
    try {
      await this.r.run(() => this.r.client.tgTransition(this.entryKey(id), this.holds, this.r.prefix, to, now, id, ...fieldsOf(patch)));
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
      await this.r.run(() => this.r.client.tgSigned(this.entryKey(id), this.holds, id, now, f.nonce, f.validBefore, f.payer, holdUntil));
    } catch (err) {
      if (/\bTG_NOT_FOUND/.test((err as Error)?.message ?? "")) throw new Error(`ledger entry ${id} not found`);
      throw err;
    }
  }
  commit(id: string, transaction: string | undefined, now: number) {
    return this.transition(id, "committed", now, { transaction });
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

  async list(f: { tenant?: string; state?: LedgerState; limit?: number }) {
    const stop = f.limit ? f.limit - 1 : -1;
    const ids = await this.r.run(() => this.r.client.zrevrange(this.idx(f.state ?? "all", f.tenant), 0, stop));
    return this.load(ids);
  }

  async usage(tenant: string, now: number): Promise<Usage> {
    const k = this.windowKeys(tenant, dayOf(now), monthOf(now));
    const [d, m, t] = await this.r.run(() => this.r.client.mget(k.daily, k.monthly, k.total));
    return { daily: BigInt(d ?? "0"), monthly: BigInt(m ?? "0"), total: BigInt(t ?? "0") };
  }

  async expiredHolds(now: number, limit: number) {
    const ids = await this.r.run(() => this.r.client.zrangebyscore(this.holds, "-inf", now, "LIMIT", 0, limit));
    return (await this.load(ids)).filter((e) => HELD.has(e.state));
  }
}
