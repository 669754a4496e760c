// Writes each tenant's requests to the shared request log (src/state/types.ts RequestLog), off the request's path: the
// access log hands over a record once the answer is ready, and one background write (kept alive by waitUntil on
// Workers) appends it, with the records of the next BATCH_MS. One write is in flight per gateway at a time; records
// that arrive meanwhile wait in a bounded buffer and go together in the next one. No request
// waits for the log, and none makes a round trip to the state before its upstream call. What a record holds: route,
// status, latency, spend, error code, request and trace id; never a body, header, query string or credential. The path
// is redacted as the access log's line is (the log's Redactor: the gateway's own secrets, keys, tokens and JWTs), before
// it is cut to length, so no part of a credential a client put in a path is kept.
import type { Context } from "hono";
import type { RequestLog, RequestRecord } from "../state/types.js";
import { routeLabel } from "./route-label.js";

/** Records held while the backend is slow or down; past it the oldest half is dropped (and counted). */
const MAX_PENDING = 5_000;
/**
 * How long the first record of a batch waits for others before the batch is written. Without it, under load nearly
 * every request started a write of its own (a write took less time than the next request took to come): on Workers a
 * Durable Object call each, on Node a chain of promises each. A read of the log on this instance writes what waits
 * first (flush), so it still sees its own requests at once; other instances see them this much later.
 */
const BATCH_MS = 50;
const MAX_PATH = 256;
const MAX_CODE = 64;
/** Reads of the request log itself are not recorded in it (a page kept open would fill it). */
const UNRECORDED = new Set(["own.requests", "own.requests.get", "admin.requests"]);

/** The log fields (middleware/access-log) a record is made from. */
export interface RecordedFields {
  tenant?: string;
  route?: string;
  paid?: bigint;
  credits?: unknown;
  /** A reservation left open by the request (a resource's or job's hold): shown as held, never as spend. */
  held?: unknown;
  cache?: string;
  upstreamMs?: number;
  traceId?: unknown;
  code?: unknown;
}

export interface RequestRecorderOptions {
  log: RequestLog;
  /** Each tenant's newest records kept (config requestLog.keep); 0 records nothing. */
  keep: number;
  /** Runs the write beside the request (GatewayServices.background). */
  background: (c: Context | undefined, work: Promise<unknown>, what: string) => void;
  now: () => number;
}

export class RequestRecorder {
  private pending: RequestRecord[] = [];
  /** The write in flight (or waiting for its batch to fill), if any. */
  private writing: Promise<void> | undefined;
  /** Ends the batch's wait now (a flush). */
  private wake: (() => void) | undefined;
  /** Records dropped because the buffer was full (the backend could not keep up). */
  dropped = 0;

  constructor(private readonly o: RequestRecorderOptions) {}

  get enabled(): boolean {
    return this.o.keep > 0;
  }

  /**
   * The record of a request that ended with `status` after `durationMs`, from its log fields; none for a request no
   * tenant made (refused before a key was read), a console page, or a read of the log itself.
   */
  static recordOf(
    c: Context,
    f: RecordedFields,
    status: number,
    durationMs: number,
    at: number,
    redact: (text: string) => string,
  ): RequestRecord | undefined {
    const tenant = f.tenant ?? c.get("tenant")?.id;
    if (!tenant) return undefined;
    const route = routeLabel(c);
    if (route.startsWith("console.") || UNRECORDED.has(route)) return undefined;
    const spent = (f.paid ?? 0n) + (status < 400 && typeof f.credits === "bigint" ? f.credits : 0n);
    const r: RequestRecord = {
      id: String(c.get("requestId") ?? ""),
      at,
      tenant,
      method: c.req.method,
      route,
      path: redact(c.req.path).slice(0, MAX_PATH),
      status,
      durationMs,
    };
    if (typeof f.upstreamMs === "number") r.upstreamMs = f.upstreamMs;
    if (spent > 0n) r.spend = spent.toString();
    if (status < 400 && typeof f.held === "bigint" && f.held > 0n) r.held = f.held.toString();
    if (typeof f.code === "string" && status >= 400) r.code = f.code.slice(0, MAX_CODE);
    if (typeof f.traceId === "string") r.traceId = f.traceId;
    if (f.cache) r.cache = f.cache;
    return r;
  }

  /** Queues the record; the write happens beside the request `c` (or with the write in flight's next batch). */
  record(c: Context | undefined, r: RequestRecord): void {
    if (!this.enabled) return;
    // Full (the backend is down or slow): the oldest half goes at once, so a full buffer costs one move per
    // MAX_PENDING / 2 records, not one per record.
    if (this.pending.length >= MAX_PENDING) {
      this.dropped += MAX_PENDING / 2;
      this.pending.splice(0, MAX_PENDING / 2);
    }
    this.pending.push(r);
    if (this.writing) return;
    const writing = this.drain().finally(() => {
      if (this.writing === writing) this.writing = undefined;
    });
    this.writing = writing;
    this.o.background(this.keptAlive(c), writing, "request log write");
  }

  /** Whether the runtime gives requests an ExecutionContext (Workers), learnt from the first request. */
  private hasContext: boolean | undefined;
  /**
   * The request to keep the write alive by, where the runtime has an ExecutionContext; none elsewhere (Node), so the
   * background runner does not look for one (Hono's getter throws without it: an exception a request, for nothing).
   */
  private keptAlive(c: Context | undefined): Context | undefined {
    if (!c) return undefined;
    if (this.hasContext === undefined) {
      try {
        this.hasContext = !!c.executionCtx;
      } catch {
        this.hasContext = false;
      }
    }
    return this.hasContext ? c : undefined;
  }

  /** Writes batches until nothing waits; a failed write loses its batch (logged by the background runner). */
  private async drain(): Promise<void> {
    // The batch fills for BATCH_MS (a flush ends the wait), after the request's own last steps.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, BATCH_MS);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
    while (this.pending.length) {
      const batch = this.pending;
      this.pending = [];
      await this.o.log.append(batch, this.o.keep);
    }
  }

  /** Waits for the write in flight, then writes what is queued (a read on this instance sees its own requests). */
  async flush(): Promise<void> {
    this.wake?.();
    await this.writing?.catch(() => {});
    if (!this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    await this.o.log.append(batch, this.o.keep);
  }
}
