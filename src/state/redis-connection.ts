// The connection every Redis store shares: fail-fast client options, the Lua scripts defined on it, and the guard that
// turns an unreachable Redis into StateUnavailableError.
import { Redis } from "ioredis";
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
}

export type RedisClient = Redis & ScriptCommands;

/** Replies that mean "Redis is there but cannot serve now", as opposed to a bug in the request. */
const UNAVAILABLE_REPLY = /^(LOADING|READONLY|MASTERDOWN|BUSY|OOM|TRYAGAIN|CLUSTERDOWN|NOREPLICAS|MISCONF)\b/;

/** Where it connects, without the password that a redis:// URL may carry. */
function describe(url: string): string {
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
  private readonly where: string;
  private readonly connectTimeoutMs: number;

  constructor(url: string, opts: RedisStoresOptions = {}) {
    this.prefix = opts.prefix ?? "tollgate:";
    this.where = describe(url);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 2000;
    const client = new Redis(url, {
      lazyConnect: true,
      // Fail fast: no offline queue, no retry or resend of a command whose connection dropped (a resent reserve
      // could run twice), and a deadline on every command.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: opts.commandTimeoutMs ?? 2000,
      connectTimeout: this.connectTimeoutMs,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    });
    for (const [name, s] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: s.numberOfKeys, lua: s.lua });
    client.on("ready", () => {
      this.everReady = true;
      this.lastError = undefined;
    });
    client.on("error", (err: Error) => {
      this.lastError = err;
      opts.onError?.(err);
    });
    client.connect().catch(() => {}); // failures surface through `error` events and the guard below
    this.client = client as RedisClient;
  }

  key(...parts: string[]): string {
    return this.prefix + parts.join(":");
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

  /** Quits (or stops reconnecting) and resolves once the client has let go of its socket. */
  async close(): Promise<void> {
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
