// Several upstream accounts behind one gateway (docs/accounts.md): which account a call goes to, and with which key.
// A creation is placed among the tenant's accounts by weight and headroom and spills to the next on a concurrency
// limit or a failure (src/upstream/upstream.ts); every owned id remembers its account (the custody record, in the shared
// KV), so every later call for it goes to that account with that account's key. Each account has a circuit breaker,
// opened by errors and slow answers, with half-open probes (breaker.ts); the resource a path addresses is
// resource-paths.ts's.
// Across a fleet: the sessions and sandboxes live on each account are counted in the shared state (AccountSlots), so a
// creation holds a slot on an account with room before it is sent and the limits hold for all instances together; a
// breaker that opens is published in the shared KV and read by the other instances at most every BREAKER_SYNC_MS.
// Without [[upstream.accounts]] there is one account, "default", with TOLLGATE_UPSTREAM_API_KEY, and none of this runs.
import type { TollgateConfig } from "../../config/schema.js";
import type { AccountPool, AccountSlots, KeyValueStore, ResourceKind } from "../state/types.js";
import { Breaker, type BreakerSettings, type BreakerState } from "./breaker.js";
import { resourceOfPath } from "./resource-paths.js";

/** The account id of the one account a gateway without [[upstream.accounts]] has. */
const DEFAULT_ACCOUNT = "default";

/** How long a custody record lives: as long as a resource may be addressed (ended ones are forgotten by ownership). */
const CUSTODY_TTL_MS = 10 * 365 * 86_400_000;
/** How long an account that answered a concurrency limit is tried last for that kind. */
const FULL_COOLDOWN_MS = 5_000;
/** How long a counted session or sandbox stays counted when its end is never seen (it ended upstream unseen). */
const LIVE_MS = 24 * 3_600_000;
/** How often an instance reads the breakers the fleet published (started beside a request, never waited for). */
export const BREAKER_SYNC_MS = 250;
const breakerKey = (account: string) => `account-breaker:${account}`;

export interface UpstreamAccount {
  id: string;
  apiKey?: string;
  weight: number;
  limits: { sessions?: number; sandboxes?: number };
}

/** The kinds whose live count an account's limits bound. */
const LIMIT_OF: Partial<Record<ResourceKind, "sessions" | "sandboxes">> = { session: "sessions", sandbox: "sandboxes" };

const custodyKey = (kind: ResourceKind, id: string) => `account:${kind}:${id}`;

/** A slot held on an account for a creation in flight (the fleet's count of its live sessions or sandboxes). */
export interface AccountHold {
  pool: AccountPool;
  account: string;
  hold: string;
}

/** Runs work beside a request (the gateway's BackgroundWork: waitUntil on Workers), never waited for. */
type Beside = (c: unknown, work: Promise<unknown>, what: string) => void;

export interface AccountEvents {
  breaker?(account: string, state: BreakerState): void;
  spill?(from: string, reason: string): void;
}

/** The gateway's upstream accounts: keys, custody records, placement order and breakers. */
export class UpstreamAccounts {
  /** [[upstream.accounts]] is set: placement, custody records and breakers run. */
  readonly configured: boolean;
  readonly list: UpstreamAccount[];
  readonly breakers = new Map<string, Breaker>();
  /** Smooth weighted round robin: each account's running credit. */
  private readonly credit = new Map<string, number>();
  /** Sessions and sandboxes this instance placed and has not seen end, by id (headroom against the limits). */
  private readonly live = new Map<string, { account: string; limit: "sessions" | "sandboxes" }>();
  private readonly fullUntil = new Map<string, number>();
  /** Where a placement event goes (metrics, log); set by the gateway. */
  events: AccountEvents = {};
  /** Where work beside a request goes (publishing an open breaker, reading the fleet's); set by the gateway. */
  beside: Beside = (_c, work) => void work.catch(() => {});
  /** How long a hold lasts when its creation never reports back: the upstream's timeout and some. */
  private readonly holdLeaseMs: number;
  /** The fleet's last known count per "<pool>:<account>" (from the last take), for ordering. */
  private readonly fleetCount = new Map<string, number>();
  /** Opened breakers not yet published, and when the fleet's were last read. */
  private unpublished = new Map<string, number>();
  private syncedAt = Number.NEGATIVE_INFINITY;
  private syncing = false;

  constructor(
    config: TollgateConfig["upstream"],
    keys: { upstreamApiKey?: string; accountApiKeys?: Record<string, string> },
    private readonly kv: KeyValueStore,
    private readonly now: () => number,
    /** The fleet's count of live sessions and sandboxes per account (absent: this instance's own count only). */
    private readonly slots?: AccountSlots,
  ) {
    this.holdLeaseMs = config.timeoutMs + 30_000;
    const accounts = config.accounts;
    this.configured = !!accounts;
    this.list = accounts
      ? accounts.map((a) => ({ id: a.id, apiKey: keys.accountApiKeys?.[a.id], weight: a.weight, limits: a.limits }))
      : [{ id: DEFAULT_ACCOUNT, apiKey: keys.upstreamApiKey, weight: 1, limits: {} }];
    const b = config.breaker;
    const settings: BreakerSettings = { failures: b.failures, window: b.window, slowMs: b.slowMs, openMs: b.openSeconds * 1000 };
    for (const a of this.list)
      this.breakers.set(
        a.id,
        new Breaker(
          settings,
          now,
          (state) => this.events.breaker?.(a.id, state),
          (until) => this.unpublished.set(a.id, until),
        ),
      );
  }

  /**
   * Called as each upstream call of a request starts (and after it): publishes breakers this instance opened, and
   * reads those the fleet opened when the last read is BREAKER_SYNC_MS old; both beside the request, never waited for.
   */
  sync(c: unknown): void {
    if (!this.configured) return;
    if (this.unpublished.size) {
      const opened = this.unpublished;
      this.unpublished = new Map();
      const work = Promise.all(
        [...opened].map(([id, until]) => this.kv.set(breakerKey(id), String(until), Math.max(1, until - this.now()))),
      );
      this.beside(c, work, "publish an open account breaker");
    }
    if (this.syncing || this.now() - this.syncedAt < BREAKER_SYNC_MS) return;
    this.syncing = true;
    this.syncedAt = this.now();
    const work = this.readFleetBreakers().finally(() => (this.syncing = false));
    this.beside(c, work, "read the fleet's account breakers");
  }

  /** Opens here every breaker another instance published as open. */
  async readFleetBreakers(): Promise<void> {
    const got = await Promise.all(this.list.map((a) => this.kv.get(breakerKey(a.id))));
    this.list.forEach((a, i) => {
      const until = Number(got[i]);
      if (got[i] !== undefined && Number.isFinite(until)) this.breakers.get(a.id)!.adopt(until);
    });
  }

  get defaultId(): string {
    return this.list[0]!.id;
  }

  get(id: string): UpstreamAccount | undefined {
    return this.list.find((a) => a.id === id);
  }

  apiKey(id: string | undefined): string | undefined {
    return (id === undefined ? this.list[0] : this.get(id))?.apiKey;
  }

  /**
   * An account's key re-read where it is kept (its apiKeyFile changed: Gateway.rotateSecrets): used from the next
   * call; a call already sent keeps the key it carried. Returns whether it changed.
   */
  setApiKey(id: string, key: string): boolean {
    const a = this.get(id);
    if (!a || !this.configured || !key || a.apiKey === key) return false;
    a.apiKey = key;
    return true;
  }

  /** The account holding a resource, from its custody record (undefined: none kept, the default account's). */
  async accountOf(kind: ResourceKind, id: string): Promise<string | undefined> {
    if (!this.configured) return undefined;
    const got = await this.kv.get(custodyKey(kind, id));
    return got && this.get(got) ? got : undefined;
  }

  /** The account of the resource an upstream path addresses, when it addresses one with a custody record. */
  async accountOfPath(path: string): Promise<string | undefined> {
    if (!this.configured) return undefined;
    const r = resourceOfPath(path);
    return r ? this.accountOf(r.kind, r.id) : undefined;
  }

  /** Writes the custody record of a resource just made (or named, as a volume by its name) on `account`. */
  async remember(kind: ResourceKind, id: string, account: string, hold?: AccountHold): Promise<void> {
    await this.custody(kind, id, account, hold, false);
  }

  /**
   * The custody record of a resource just created, written beside its ownership claim (the caller's, in parallel: one
   * round trip for both) and the fleet's count: an existing record is left as it is, since the claim may yet be refused
   * (an id another tenant holds). Answers whether the record was already there (the caller rewrites it once the claim
   * won, see `remember`).
   */
  async rememberCreated(kind: ResourceKind, id: string, account: string, hold?: AccountHold): Promise<boolean> {
    return !(await this.custody(kind, id, account, hold, true));
  }

  private async custody(kind: ResourceKind, id: string, account: string, hold: AccountHold | undefined, ifAbsent: boolean) {
    if (!this.configured) return true;
    const limit = LIMIT_OF[kind];
    const counted =
      limit && this.slots && this.limited(limit)
        ? this.slots.settle(limit, account, hold?.account === account ? hold.hold : "", id, LIVE_MS)
        : undefined;
    const key = custodyKey(kind, id);
    // The custody record and the fleet's count side by side: one round trip.
    const [written] = await Promise.all([
      ifAbsent ? this.kv.setIfAbsent(key, account, CUSTODY_TTL_MS) : this.kv.set(key, account, CUSTODY_TTL_MS).then(() => true),
      counted,
    ]);
    if (limit) this.live.set(id, { account, limit });
    return written;
  }

  /** A session or sandbox ended: its slot on its account is free again (here and in the fleet's count). */
  async ended(kind: ResourceKind, id: string): Promise<void> {
    this.live.delete(id);
    const limit = LIMIT_OF[kind];
    if (limit && this.slots && this.limited(limit))
      await this.slots.release(
        limit,
        this.list.map((a) => a.id),
        id,
      );
  }

  /** Some account has a limit on `pool`: the fleet counts it. */
  private limited(pool: AccountPool): boolean {
    return this.list.some((a) => a.limits[pool] !== undefined);
  }

  /**
   * For a creation of `kind`: the first of `order` with room by the fleet's count, with a slot held on it (one atomic
   * state round trip). Undefined when the kind is not counted (no account limits it), or every one is at its limit
   * (then the upstream's answer is the truth).
   */
  async hold(kind: ResourceKind | undefined, order: UpstreamAccount[]): Promise<AccountHold | undefined> {
    const pool = kind && LIMIT_OF[kind];
    if (!pool || !this.slots || !this.limited(pool) || !order.length) return undefined;
    const hold = crypto.randomUUID();
    const took = await this.slots.take(
      pool,
      order.map((a) => ({ account: a.id, limit: a.limits[pool] })),
      hold,
      this.holdLeaseMs,
    );
    for (const [account, n] of Object.entries(took.counts)) this.fleetCount.set(`${pool}:${account}`, n);
    if (took.account === undefined) return undefined;
    this.fleetCount.set(`${pool}:${took.account}`, (took.counts[took.account] ?? 0) + 1);
    return { pool, account: took.account, hold };
  }

  /** A held slot whose creation made nothing: free it. */
  async drop(h: AccountHold): Promise<void> {
    await this.slots?.settle(h.pool, h.account, h.hold, undefined, LIVE_MS);
  }

  /** An account answered a creation of `kind` with its concurrency limit: tried last for a while. */
  noteFull(account: string, kind: ResourceKind | undefined): void {
    this.fullUntil.set(`${account}:${kind ?? "*"}`, this.now() + FULL_COOLDOWN_MS);
  }

  private headroom(a: UpstreamAccount, kind: ResourceKind | undefined): boolean {
    const until = this.fullUntil.get(`${a.id}:${kind ?? "*"}`);
    if (until !== undefined && until > this.now()) return false;
    const limit = kind && LIMIT_OF[kind];
    const max = limit ? a.limits[limit] : undefined;
    if (max === undefined) return true;
    // Counted by the fleet: its count (as the last take read it) is the truth; this instance's own map still holds
    // resources another instance ended, so it would keep an account looking full.
    const fleet = this.slots ? this.fleetCount.get(`${limit}:${a.id}`) : undefined;
    if (this.slots) return (fleet ?? 0) < max;
    let n = 0;
    for (const r of this.live.values()) if (r.account === a.id && r.limit === limit) n++;
    return n < max;
  }

  /** The accounts a tenant may use for new work (its pin, else all). */
  allowed(tenant: { accounts?: string[] } | undefined): UpstreamAccount[] {
    const pin = tenant?.accounts;
    return pin ? this.list.filter((a) => pin.includes(a.id)) : this.list;
  }

  /** For work that creates nothing (a credit-billed search): the heaviest allowed account whose breaker lets calls through. */
  pick(tenant: { accounts?: string[] } | undefined): UpstreamAccount | undefined {
    const pool = this.allowed(tenant).filter((a) => this.breakers.get(a.id)!.available());
    return pool.sort((a, b) => b.weight - a.weight)[0];
  }

  /**
   * The order in which to try a creation of `kind` for the tenant: the next by weight (smooth weighted round robin)
   * among the accounts with headroom and a breaker letting calls through, then the others with headroom by weight,
   * then those without (their count may be stale; the upstream says). Accounts whose breaker is open are left out.
   * `only` narrows it to one account (a resource the body names lives there).
   */
  placementOrder(tenant: { accounts?: string[] } | undefined, kind: ResourceKind | undefined, only?: string): UpstreamAccount[] {
    let pool = this.allowed(tenant).filter((a) => this.breakers.get(a.id)!.available());
    if (only !== undefined) pool = pool.filter((a) => a.id === only);
    const roomy = pool.filter((a) => this.headroom(a, kind));
    const weighted = roomy.filter((a) => a.weight > 0);
    const order: UpstreamAccount[] = [];
    if (weighted.length) {
      const total = weighted.reduce((s, a) => s + a.weight, 0);
      let best: UpstreamAccount | undefined;
      for (const a of weighted) {
        const c = (this.credit.get(a.id) ?? 0) + a.weight;
        this.credit.set(a.id, c);
        if (!best || c > this.credit.get(best.id)!) best = a;
      }
      this.credit.set(best!.id, this.credit.get(best!.id)! - total);
      order.push(best!);
    }
    const byWeight = (a: UpstreamAccount, b: UpstreamAccount) => b.weight - a.weight;
    for (const a of [...roomy].sort(byWeight)) if (!order.includes(a)) order.push(a);
    for (const a of [...pool].sort(byWeight)) if (!order.includes(a)) order.push(a);
    return order;
  }

  /** What readiness, metrics and the console show of each account (never its key). */
  snapshot(): Array<{ id: string; weight: number; breaker: BreakerState; opened: number; live: number; hasKey: boolean }> {
    return this.list.map((a) => {
      let live = 0;
      for (const r of this.live.values()) if (r.account === a.id) live++;
      const b = this.breakers.get(a.id)!;
      return { id: a.id, weight: a.weight, breaker: b.state, opened: b.opened, live, hasKey: !!a.apiKey };
    });
  }
}
