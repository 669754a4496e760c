// In-process state backend: correct for one gateway process (the default); fleets use Redis or Durable Objects.
import type {
  BudgetLedger,
  BudgetLimits,
  HoldGrowth,
  IdempotencyBegin,
  IdempotencyStore,
  KeyValueStore,
  LedgerEntry,
  LedgerFilter,
  LedgerState,
  NewLedgerEntry,
  OwnershipRegistry,
  ReserveResult,
  ResourceKind,
  SettlementFields,
  SpendKind,
  StateStores,
  StoredResponse,
  Usage,
  WindowAmounts,
} from "./types.js";
import { ENDED_RETENTION_MS, type LimitedClaim, type OwnedRecord } from "./types.js";
import { grown, HELD, holdExpiresAt, matches } from "./holds.js";
import { MemoryAccountSlots } from "./memory-account-slots.js";
import { MemoryAuditLog, MemoryDueIndex, MemoryOutbox, MemoryRequestLog, MemoryTenantStore } from "./memory-operators.js";
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
  usageOf,
  windowKeys,
} from "./windows.js";
import { FixedWindowRateLimiter } from "./fixed-window.js";
import { LRUCache } from "lru-cache";

const definedOnly = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

class MemoryLedger implements BudgetLedger {
  private readonly entries = new Map<string, LedgerEntry>();
  private readonly counters = new Map<string, bigint>();

  private add(key: string, by: bigint) {
    this.counters.set(key, (this.counters.get(key) ?? 0n) + by);
  }
  /** Adds `by` to every window the entry counts in: the summed counters, and the credits ones for credits. */
  private count(e: Pick<LedgerEntry, "tenant" | "day" | "month" | "kind">, by: bigint) {
    const keys = [windowKeys(e.tenant, e.day, e.month)];
    if (kindOf(e) === "credits") keys.push(creditKeys(e.tenant, e.day, e.month));
    for (const k of keys) {
      this.add(k.daily, by);
      this.add(k.monthly, by);
      this.add(k.total, by);
    }
  }
  private amounts(k: { daily: string; monthly: string; total: string }): WindowAmounts {
    return {
      daily: this.counters.get(k.daily) ?? 0n,
      monthly: this.counters.get(k.monthly) ?? 0n,
      total: this.counters.get(k.total) ?? 0n,
    };
  }
  private usageAt(tenant: string, day: string, month: string): Usage {
    return usageOf(this.amounts(windowKeys(tenant, day, month)), this.amounts(creditKeys(tenant, day, month)));
  }

  async reserve(e: NewLedgerEntry, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    const existing = this.entries.get(e.id);
    if (existing) return { ok: true, entry: { ...existing } };
    const day = dayOf(now);
    const month = monthOf(now);
    const usage = this.usageAt(e.tenant, day, month);
    const amount = BigInt(e.amount);
    const over = firstExceeded(usage, amount, limits);
    if (over) return { ok: false, window: over, limit: limits[over]!, spent: usage[over], resetAt: resetAt(over, now) };
    const entry: LedgerEntry = { ...e, kind: kindOf(e), state: "reserved", day, month, createdAt: now, updatedAt: now };
    this.count(entry, amount);
    this.entries.set(e.id, entry);
    return { ok: true, entry: { ...entry } };
  }

  private transition(id: string, to: LedgerState, now: number, patch: Partial<LedgerEntry> = {}, finalAmount?: bigint) {
    const e = this.entries.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    if (e.state === "committed" || e.state === "released") {
      if (e.state === to) return; // idempotent
      throw new Error(`ledger entry ${id} is ${e.state}, cannot become ${to}`);
    }
    const reserved = BigInt(e.amount);
    if (COUNTED.has(e.state) && !COUNTED.has(to)) this.count(e, -reserved);
    if (to === "committed") {
      const final = settledAmount(e, finalAmount);
      if (final !== reserved) {
        this.count(e, final - reserved);
        patch = { ...patch, amount: final.toString(), reservedAmount: e.amount };
      }
    }
    Object.assign(e, patch, { state: to, updatedAt: now });
  }

  async attach(id: string, f: { resource?: string; validBefore?: number }, now: number) {
    const e = this.entries.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    Object.assign(e, definedOnly(f), { updatedAt: now });
  }
  async extend(id: string, by: HoldGrowth, limits: BudgetLimits, now: number): Promise<ReserveResult> {
    const e = this.entries.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    if (!HELD.has(e.state)) throw new Error(`ledger entry ${id} is ${e.state}, cannot be extended`);
    const next = grown(e, by);
    if (next.delta > 0n) {
      const usage = this.usageAt(e.tenant, e.day, e.month);
      const over = firstExceeded(usage, next.delta, limits);
      if (over) return { ok: false, window: over, limit: limits[over]!, spent: usage[over], resetAt: resetAt(over, e.createdAt) };
    }
    this.count(e, next.delta);
    Object.assign(e, { amount: next.amount.toString(), validBefore: next.validBefore, updatedAt: now });
    return { ok: true, entry: { ...e } };
  }
  async commit(id: string, transaction: string | undefined, now: number, finalAmount?: bigint, fields?: SettlementFields) {
    this.transition(id, "committed", now, { ...settlementPatch(fields), ...(transaction ? { transaction } : {}) }, finalAmount);
  }
  async resettle(id: string, finalAmount: bigint, fields: SettlementFields, now: number) {
    const e = this.entries.get(id);
    if (!e) throw new Error(`ledger entry ${id} not found`);
    if (e.kind !== "credits" || e.state !== "committed")
      throw new Error(`ledger entry ${id} is ${e.kind} ${e.state}, cannot be settled again`);
    if (finalAmount < 0n) throw new RangeError(`final amount must not be negative, got ${finalAmount}`);
    const delta = finalAmount - BigInt(e.amount);
    this.count(e, delta);
    Object.assign(e, settlementPatch(fields), {
      amount: finalAmount.toString(),
      reservedAmount: e.reservedAmount ?? e.amount,
      updatedAt: now,
    });
    return delta;
  }
  async release(id: string, reason: string, now: number) {
    this.transition(id, "released", now, { reason });
  }
  async markUncertain(id: string, reason: string, now: number) {
    this.transition(id, "uncertain", now, { reason });
  }
  async get(id: string) {
    const e = this.entries.get(id);
    return e ? { ...e } : undefined;
  }
  async list(f: LedgerFilter) {
    const out: LedgerEntry[] = [];
    for (const e of [...this.entries.values()].reverse()) {
      if (!matches(e, f)) continue;
      out.push({ ...e });
      if (f.limit && out.length >= f.limit) break;
    }
    return out;
  }
  async usage(tenant: string, now: number) {
    return this.usageAt(tenant, dayOf(now), monthOf(now));
  }
  private holds(kind: SpendKind, now: number, limit: number) {
    return [...this.entries.values()]
      .filter((e) => e.kind === kind && HELD.has(e.state) && holdExpiresAt(e) <= now)
      .sort((a, b) => holdExpiresAt(a) - holdExpiresAt(b))
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }
  async expiredHolds(now: number, limit: number) {
    return this.holds("x402", now, limit);
  }
  async expiredCreditHolds(now: number, limit: number) {
    return this.holds("credits", now, limit);
  }
}

interface OwnerRecord {
  tenant: string;
  active: boolean;
  status?: string;
  /** When it ended (epoch ms), while inactive. */
  endedAt?: number;
}

/** Ownership in maps: one record per resource, and per kind and tenant its ids in claim order (a Map keeps it). */
class MemoryOwnership implements OwnershipRegistry {
  private readonly owners = new Map<string, OwnerRecord>();
  private readonly byTenant = new Map<string, Map<string, true>>();
  constructor(
    private readonly now: () => number,
    private readonly retentionMs: number,
  ) {}

  private index(kind: ResourceKind, tenant: string, create: true): Map<string, true>;
  private index(kind: ResourceKind, tenant: string): Map<string, true> | undefined;
  private index(kind: ResourceKind, tenant: string, create?: true) {
    const k = `${kind}:${tenant}`;
    let m = this.byTenant.get(k);
    if (!m && create) this.byTenant.set(k, (m = new Map()));
    return m;
  }
  /** The live record, or undefined once it ended longer than the retention ago (then it is dropped). */
  private live(kind: ResourceKind, id: string): OwnerRecord | undefined {
    const o = this.owners.get(`${kind}:${id}`);
    if (o?.endedAt !== undefined && this.now() - o.endedAt >= this.retentionMs) {
      this.owners.delete(`${kind}:${id}`);
      this.index(kind, o.tenant)?.delete(id);
      return undefined;
    }
    return o;
  }
  async claim(kind: ResourceKind, id: string, tenant: string) {
    const old = this.owners.get(`${kind}:${id}`);
    // First claim wins: a resource another tenant owns is never moved.
    if (old && old.tenant !== tenant) return false;
    if (old) this.index(kind, tenant)?.delete(id);
    this.owners.set(`${kind}:${id}`, { tenant, active: true });
    this.index(kind, tenant, true).set(id, true);
    return true;
  }
  async claimWithin(kind: ResourceKind, id: string, tenant: string, limit: number): Promise<LimitedClaim> {
    // One synchronous step (no await before the claim): of concurrent callers, each sees the ones before it.
    const old = this.live(kind, id);
    const active = this.countActive(kind, tenant);
    if (old && old.tenant !== tenant) return { outcome: "taken", active };
    // Already the tenant's live one: counted, so never refused.
    const counted = old?.active === true && this.index(kind, tenant)?.has(id) === true;
    if (!counted && active >= limit) return { outcome: "full", active };
    void this.claim(kind, id, tenant); // synchronous in its body
    return { outcome: "claimed", active: counted ? active : active + 1 };
  }
  async owner(kind: ResourceKind, id: string) {
    return this.live(kind, id)?.tenant;
  }
  async ownerRecord(kind: ResourceKind, id: string) {
    const o = this.live(kind, id);
    return o ? { tenant: o.tenant, active: o.active } : undefined;
  }
  async list(kind: ResourceKind, tenant: string) {
    return (await this.records(kind, tenant)).map((r) => r.id);
  }
  async records(kind: ResourceKind, tenant: string) {
    const ids = [...(this.index(kind, tenant)?.keys() ?? [])].reverse();
    const out: OwnedRecord[] = [];
    for (const id of ids) {
      const o = this.live(kind, id);
      if (o) out.push(o.status === undefined ? { id, active: o.active } : { id, active: o.active, status: o.status });
    }
    return out;
  }
  async noteStatus(kind: ResourceKind, id: string, status: string) {
    const o = this.live(kind, id);
    if (o) o.status = status;
  }
  async setActive(kind: ResourceKind, id: string, active: boolean) {
    const o = this.live(kind, id);
    if (!o) return;
    if (o.active !== active) delete o.status;
    o.active = active;
    if (active) delete o.endedAt;
    else o.endedAt = this.now();
  }
  async activeCount(kind: ResourceKind, tenant: string) {
    return this.countActive(kind, tenant);
  }
  private countActive(kind: ResourceKind, tenant: string) {
    let n = 0;
    for (const id of this.index(kind, tenant)?.keys() ?? []) if (this.owners.get(`${kind}:${id}`)?.active) n++;
    return n;
  }
}

/** Timers past this (about 24.8 days) overflow; entries that live longer are only checked when read. */
const LONGEST_TIMER_MS = 2 ** 31 - 2;

/**
 * Entries that carry their own expiry, kept in lru-cache with that ttl on the store's clock, so an expired entry reads
 * as absent and is purged on time: a long-lived process stays flat. No size bound: nothing here may be evicted early.
 */
class ExpiringMap<V extends { exp: number }> {
  private readonly cache: LRUCache<string, V>;
  constructor(private readonly clock: () => number) {
    this.cache = new LRUCache<string, V>({ ttl: LONGEST_TIMER_MS, ttlAutopurge: true, ttlResolution: 0, perf: { now: clock } });
  }
  get(key: string): V | undefined {
    return this.cache.get(key);
  }
  set(key: string, value: V): void {
    const ttl = Math.max(1, Math.ceil(value.exp - this.clock()));
    this.cache.set(key, value, { ttl: ttl > LONGEST_TIMER_MS ? 0 : ttl });
  }
  delete(key: string): void {
    this.cache.delete(key);
  }
}

export class MemoryKeyValue implements KeyValueStore {
  private readonly map = new ExpiringMap<{ v: string; exp: number }>(() => this.now());
  constructor(private readonly now: () => number = Date.now) {}
  private live(key: string) {
    const e = this.map.get(key);
    if (e && e.exp <= this.now()) {
      this.map.delete(key);
      return undefined;
    }
    return e;
  }
  async get(key: string) {
    return this.live(key)?.v;
  }
  async set(key: string, value: string, ttlMs: number) {
    this.map.set(key, { v: value, exp: this.now() + ttlMs });
  }
  async delete(key: string) {
    this.map.delete(key);
  }
  async incrBy(key: string, by: number, ttlMs: number) {
    const e = this.live(key);
    const n = (e ? Number(e.v) : 0) + by;
    this.map.set(key, { v: String(n), exp: e?.exp ?? this.now() + ttlMs });
    return n;
  }
  async setIfAbsent(key: string, value: string, ttlMs: number) {
    if (this.live(key)) return false;
    this.map.set(key, { v: value, exp: this.now() + ttlMs });
    return true;
  }
}

class MemoryIdempotency implements IdempotencyStore {
  private readonly map = new ExpiringMap<{ state: "pending" | "done"; exp: number; response?: StoredResponse }>(() => this.now());
  constructor(private readonly now: () => number = Date.now) {}
  async begin(key: string, _fingerprint: string, leaseMs: number): Promise<IdempotencyBegin> {
    const e = this.map.get(key);
    if (e && e.exp > this.now()) return e.state === "done" ? { state: "done", response: e.response! } : { state: "pending" };
    this.map.set(key, { state: "pending", exp: this.now() + leaseMs });
    return { state: "new" };
  }
  async complete(key: string, response: StoredResponse, ttlMs: number) {
    this.map.set(key, { state: "done", exp: this.now() + ttlMs, response });
  }
  async abandon(key: string) {
    this.map.delete(key);
  }
}

/** `endedRetentionMs`: how long the owner of an ended resource is remembered (default 7 days). */
export function memoryStores(now: () => number = Date.now, opts: { endedRetentionMs?: number } = {}): StateStores {
  const kv = new MemoryKeyValue(now);
  return {
    ledger: new MemoryLedger(),
    ownership: new MemoryOwnership(now, opts.endedRetentionMs ?? ENDED_RETENTION_MS),
    kv,
    idempotency: new MemoryIdempotency(now),
    rateLimiter: new FixedWindowRateLimiter(kv),
    async ping() {},
    tenants: new MemoryTenantStore(),
    audit: new MemoryAuditLog(),
    outbox: new MemoryOutbox(),
    requests: new MemoryRequestLog(),
    accountSlots: new MemoryAccountSlots(now),
    due: new MemoryDueIndex(),
    async close() {},
  };
}
