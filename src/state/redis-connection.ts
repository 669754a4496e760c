// The connection every Redis store shares: fail-fast client options, the Lua scripts defined on it, and the guard that
// turns an unreachable Redis into StateUnavailableError. One Redis, a Sentinel-managed primary, or a Redis Cluster; in
// a Cluster, the keys each multi-key script touches share a hash tag (see `key`) so every script stays on one slot.
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { StateUnavailableError } from "./errors.js";
import { SCRIPTS, type ScriptCommands } from "./redis-scripts.js";

export interface RedisStoresOptions {
  /** Prepended to every key, so several gateways (or tests) can share one Redis. Default "tollgate:". */
  prefix?: string;
  /** A command that gets no answer within this long rejects (default 2000 ms). */
  commandTimeoutMs?: number;
  /** How long the first calls wait for the initial connection (default 2000 ms). */
  connectTimeoutMs?: number;
  /** Told about connection errors (ioredis would otherwise print them as unhandled). */
  onError?: (err: Error) => void;
  /**
   * Money writes (ledger, idempotency keys) are confirmed with WAIT on at least this many replicas before they count
   * as done; fewer within `confirmTimeoutMs` fails the call closed (StateUnavailableError). Default 0: no WAIT.
   */
  confirmReplicas?: number;
  /** How long WAIT waits for the replicas (default 500 ms). */
  confirmTimeoutMs?: number;
  /** How long the owner of an ended resource is remembered (default 7 days). */
  endedRetentionMs?: number;
  /** Key layout with hash tags even on one Redis (always on in a Cluster). */
  hashTags?: boolean;
  /**
   * Where the ledger's keys live with hash tags: "tenant" (default), one tag per tenant, so a Cluster spreads the
   * ledger over its primaries; "shared", the layout before it, one "{ledger}" tag (one slot) for every tenant.
   */
  ledgerLayout?: "tenant" | "shared";
  /**
   * Where ownership's keys live with hash tags: "tenant" (default), each resource's record on its own slot and each
   * tenant's lists under the tenant's tag, so ownership spreads over a Cluster's primaries; "shared", the layout
   * before it, one "{own}" tag (one slot) for the whole fleet's ownership.
   */
  ownershipLayout?: "tenant" | "shared";
}

/** Where the state lives: one Redis (a URL), a primary found through Sentinel, or a Cluster. */
export type RedisTarget =
  | string
  | { sentinels: { host: string; port: number }[]; name: string; password?: string; db?: number }
  | { cluster: { host: string; port: number }[]; password?: string };

export type RedisClient = Redis & ScriptCommands;

/**
 * Key groups whose keys one script touches together: in a Cluster they carry the group as hash tag ("{ledger}"), so
 * all land on one slot. Other keys (kv, idempotency, rate windows) are each on their own and spread over the shards.
 */
const TAGGED = new Set(["ledger", "own", "tenants", "audit", "outbox", "acct"]);
/** Replies that mean "Redis is there but cannot serve now", as opposed to a bug in the request. */
const UNAVAILABLE_REPLY = /^(LOADING|READONLY|MASTERDOWN|BUSY|OOM|TRYAGAIN|CLUSTERDOWN|NOREPLICAS|MISCONF)\b/;

/** Where it connects, without the password that a redis:// URL may carry. */
function describe(target: RedisTarget): string {
  if (typeof target !== "string") {
    const nodes = "cluster" in target ? target.cluster : target.sentinels;
    const what = "cluster" in target ? "Redis Cluster" : `Sentinel primary "${target.name}"`;
    return `${what} via ${nodes.map((n) => `${n.host}:${n.port}`).join(",")}`;
  }
  const url = target;
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 6379}`;
  } catch {
    return "the configured Redis";
  }
}

/** The connection shared by every Redis store, with the fail-closed guard each call goes through. */
export class RedisConnection {
  readonly client: RedisClient;
  readonly prefix: string;
  private everReady = false;
  private lastError: Error | undefined;
  private firstConnect: Promise<void> | undefined;
  /** Set by close(): the only end of the client that is meant. */
  private closing = false;
  /** Restarts of a client that ioredis ended by itself, since it was last ready (the delay grows with them). */
  private restarts = 0;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly where: string;
  private readonly connectTimeoutMs: number;
  /** WAIT on this many replicas after a money write (0: none). */
  readonly confirmReplicas: number;
  private readonly confirmTimeoutMs: number;
  /** Keys of a TAGGED group carry a hash tag. */
  readonly tagged: boolean;
  /** The ledger's keys carry their tenant as hash tag (docs/state-layout.md). */
  readonly ledgerPerTenant: boolean;
  /** Ownership's records on their own slots and its lists under their tenant's tag (docs/state-layout.md). */
  readonly ownershipPerTenant: boolean;

  constructor(target: RedisTarget, opts: RedisStoresOptions = {}) {
    this.prefix = opts.prefix ?? "tollgate:";
    this.where = describe(target);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 2000;
    this.confirmReplicas = opts.confirmReplicas ?? 0;
    this.confirmTimeoutMs = opts.confirmTimeoutMs ?? 500;
    const isCluster = typeof target !== "string" && "cluster" in target;
    this.tagged = isCluster || opts.hashTags === true;
    this.ledgerPerTenant = this.tagged && opts.ledgerLayout !== "shared";
    this.ownershipPerTenant = this.tagged && opts.ownershipLayout !== "shared";
    const retryStrategy = (times: number) => Math.min(times * 100, 1000);
    const base: RedisOptions = {
      lazyConnect: true,
      // Fail fast: no offline queue, no retry or resend of a command whose connection dropped (a resent reserve
      // could run twice), and a deadline on every command.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: opts.commandTimeoutMs ?? 2000,
      connectTimeout: this.connectTimeoutMs,
    };
    let client: Redis | Cluster;
    if (typeof target === "string") client = new Redis(target, { ...base, retryStrategy });
    else if ("cluster" in target) {
      const { enableOfflineQueue: _q, ...redisOptions } = base;
      client = new Cluster(target.cluster, {
        lazyConnect: true,
        enableOfflineQueue: false,
        redisOptions: { ...redisOptions, password: target.password },
        clusterRetryStrategy: retryStrategy,
        // A MOVED/ASK redirect means the command did not run where it was sent: following it is safe.
        maxRedirections: 4,
        retryDelayOnFailover: 100,
        retryDelayOnTryAgain: 100,
        retryDelayOnClusterDown: 100,
      });
    } else {
      client = new Redis({
        ...base,
        sentinels: target.sentinels,
        name: target.name,
        password: target.password,
        db: target.db,
        retryStrategy,
        sentinelRetryStrategy: retryStrategy,
        // A sentinel that takes the connection and never answers must not hold a reconnect forever.
        sentinelCommandTimeout: opts.commandTimeoutMs ?? 2000,
        // A primary that turned replica (after a failover) answers READONLY: reconnect to find the new one.
        reconnectOnError: (err) => /^READONLY\b/.test(err.message),
        failoverDetector: true,
      });
    }
    for (const [name, s] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: s.numberOfKeys, lua: s.lua });
    client.on("ready", () => {
      this.everReady = true;
      this.lastError = undefined;
      this.restarts = 0;
    });
    // ioredis ends a client for good when a reconnect is cut short: its failover detector, on a sentinel's
    // +switch-master, disconnects the connector while that connector is still asking a sentinel where the primary is
    // (after the old primary died, so the client was already reconnecting), and the reconnect then fails as "Connection
    // is closed." into the "end" state, from which it never tries again. Seen under load in test/state/failover.test.ts:
    // both gateways answering 503 for good while the new primary served. Only close() ends it here; any other end
    // starts the client again.
    client.on("end", () => {
      if (this.closing) return;
      const delay = Math.min(++this.restarts * 100, 1000);
      clearTimeout(this.restartTimer);
      this.restartTimer = setTimeout(() => {
        this.restartTimer = undefined;
        if (!this.closing && this.client.status === "end") this.client.connect().catch(() => {});
      }, delay);
      this.restartTimer.unref?.();
    });
    client.on("error", (err: Error) => {
      this.lastError = err;
      opts.onError?.(err);
    });
    client.connect().catch(() => {}); // failures surface through `error` events and the guard below
    this.client = client as unknown as RedisClient;
  }

  /**
   * `prefix` + the parts joined with ":". In the hash-tag layout (a Cluster), a TAGGED group's name is the hash tag:
   * "tollgate:{ledger}:e:<id>", so every key one script touches sits on one slot.
   */
  key(...parts: string[]): string {
    if (this.tagged && TAGGED.has(parts[0]!)) return `${this.prefix}{${parts[0]}}:${parts.slice(1).join(":")}`;
    return this.prefix + parts.join(":");
  }

  /**
   * A key of one tenant in the tenant layout (the hash-tag layout: a Cluster, or `hashTags`): the tenant is the hash
   * tag, "tollgate:{t:acme}:ledger:e:<id>", so every script of a tenant's ledger touches one slot and tenants spread
   * over the primaries.
   */
  tenantKey(tenant: string, ...parts: string[]): string {
    return `${this.prefix}{t:${tenant}}:${parts.join(":")}`;
  }

  /** A key of `group` named by a ready-made name (windows.ts builds the budget counter names). */
  keyIn(group: string, name: string): string {
    return this.tagged ? `${this.prefix}{${group}}:${name}` : this.prefix + name;
  }

  /** Resolves once connected; rejects with StateUnavailableError after connectTimeoutMs. */
  async ready(): Promise<void> {
    if (this.client.status === "ready") return;
    // Only the first connection is waited for; after that, an unreachable Redis fails the call at once.
    if (!this.everReady && this.client.status !== "end") {
      this.firstConnect ??= new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.client.off("ready", done);
          resolve();
        };
        const timer = setTimeout(done, this.connectTimeoutMs);
        this.client.once("ready", done);
      });
      await this.firstConnect;
      if ((this.client.status as string) === "ready") return; // changed while we waited
    }
    throw this.unavailable(this.lastError);
  }

  private unavailable(cause: unknown): StateUnavailableError {
    const why = (cause as Error | undefined)?.message ?? `connection ${this.client.status}`;
    return new StateUnavailableError(`Redis at ${this.where} is unavailable (${why}); the operation was not applied`, { cause });
  }

  /** Runs one operation: waits for the first connection, then fails at once while Redis is unreachable. */
  async run<T>(op: () => Promise<T>): Promise<T> {
    await this.ready();
    try {
      return await op();
    } catch (err) {
      const e = err as Error;
      if (e?.name === "ReplyError" && !UNAVAILABLE_REPLY.test(e.message)) throw err;
      throw this.unavailable(err);
    }
  }

  /**
   * A money write: the command `write` queues, then (with confirmReplicas) WAIT in the same round trip, so the write
   * counts as done only once at least that many replicas have it: a failover to a replica cannot lose it. Fewer
   * replicas in time fails closed with StateUnavailableError (the write may stand on the primary alone; callers treat
   * it like a lost answer). Script errors come back as thrown.
   */
  async confirmed<T>(write: (p: RedisClient) => void): Promise<T> {
    const replies = await this.run(async () => {
      const p = this.client.pipeline();
      write(p as unknown as RedisClient); // a pipeline queues the same commands, scripts included
      if (this.confirmReplicas > 0) p.call("WAIT", this.confirmReplicas, this.confirmTimeoutMs);
      return (await p.exec()) ?? [];
    });
    const [err, value] = replies[0] ?? [new Error("no reply")];
    if (err) {
      if (err.name === "ReplyError" && !UNAVAILABLE_REPLY.test(err.message)) throw err;
      throw this.unavailable(err);
    }
    if (this.confirmReplicas > 0) {
      const [werr, acked] = replies[1] ?? [new Error("no WAIT reply")];
      if (werr || Number(acked) < this.confirmReplicas)
        throw this.unavailable(werr ?? new Error(`the write reached ${Number(acked)} of ${this.confirmReplicas} replicas in time`));
    }
    return value as T;
  }

  /** Quits (or stops reconnecting) and resolves once the client has let go of its socket. */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.restartTimer);
    const status = this.client.status;
    if (status === "end") return;
    if (status === "reconnecting" || status === "wait" || status === "close") {
      this.client.disconnect(); // clears the pending reconnect; there is no socket to wait for
      return;
    }
    const ended = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      this.client.once("end", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    if (status === "ready") await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
    await ended;
  }
}
