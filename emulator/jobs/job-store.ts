// Every job the emulator runs: ids, the pending → running → completed/failed/stopped states, a bounded run queue.
import { randomUUID } from "node:crypto";
import { Slots } from "./slots.js";

export type JobStatus = "pending" | "running" | "completed" | "failed" | "stopped";

/** The job families, each with its own URL space: a scrape id is not a crawl id. */
export type JobKind = "scrape" | "batch-scrape" | "crawl" | "extract" | "web-batch-fetch" | "web-crawl" | `task/${string}`;

export interface Job<P = unknown> {
  id: string;
  kind: JobKind;
  status: JobStatus;
  /** Every status the job has been in, in order (tests read it; clients see only `status`). */
  history: JobStatus[];
  params: P;
  createdAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
  error?: string;
  /** Results so far: pages for batch and crawl jobs, the output for the others. */
  pages: unknown[];
  data?: unknown;
  metadata?: Record<string, unknown>;
  /** The browser session an agent task runs in (not on the wire: tests and the gateway's tests read it). */
  sessionId?: string;
  /** Aborted when the job is stopped or the emulator closes; runners check it between steps. */
  signal: AbortSignal;
}

export type JobRunner<P> = (job: Job<P>) => Promise<void>;

interface Entry {
  job: Job<any>;
  controller: AbortController;
  done?: Promise<void>;
}

export class JobStore {
  private readonly entries = new Map<string, Entry>();
  private readonly slots: Slots;
  private closed = false;

  private readonly maxKeptJobs: number;

  private readonly onFinish?: (job: Job) => void;

  constructor(opts: { maxRunningJobs?: number; maxKeptJobs?: number; onFinish?: (job: Job) => void } = {}) {
    this.slots = new Slots(opts.maxRunningJobs ?? 3);
    this.maxKeptJobs = opts.maxKeptJobs ?? 1000;
    this.onFinish = opts.onFinish;
  }

  /** Registers a pending job and queues `run`; it starts when a slot is free. A throw fails the job with its message. */
  start<P>(kind: JobKind, params: P, run: JobRunner<P>): Job<P> {
    const controller = new AbortController();
    const job: Job<P> = {
      id: randomUUID(),
      kind,
      status: "pending",
      history: ["pending"],
      params,
      createdAt: new Date(),
      pages: [],
      signal: controller.signal,
    };
    const entry: Entry = { job, controller };
    this.entries.set(job.id, entry);
    this.forgetOldest();
    entry.done = (async () => {
      const release = await this.slots.acquire();
      try {
        if (job.status !== "pending") return;
        if (this.closed) return this.finish(job, "failed", "The emulator shut down before the job ran");
        this.move(job, "running");
        job.startedAt = new Date();
        await run(job);
        if ((job.status as JobStatus) === "running") this.finish(job, controller.signal.aborted ? "stopped" : "completed");
      } catch (err) {
        if ((job.status as JobStatus) === "running") this.finish(job, "failed", (err as Error)?.message ?? String(err));
      } finally {
        release();
      }
    })();
    return job;
  }

  /** The job of that kind, or undefined (an id of another kind is unknown here, as upstream). */
  get(kind: JobKind, id: string): Job | undefined {
    const e = this.entries.get(id);
    return e && e.job.kind === kind ? e.job : undefined;
  }

  /** All jobs, newest first (for tests and the gateway's tests). */
  list(): Job[] {
    return [...this.entries.values()].map((e) => e.job).sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  }

  /** Stops a pending or running job at once; a job that already ended is left as it is. False for an unknown id. */
  stop(kind: JobKind, id: string): boolean {
    const e = this.entries.get(id);
    if (!e || e.job.kind !== kind) return false;
    if (e.job.status === "pending" || e.job.status === "running") {
      e.controller.abort();
      this.finish(e.job, "stopped");
    }
    return true;
  }

  /** Resolves when the job has settled (its runner returned), for tests. */
  settled(id: string): Promise<void> {
    return this.entries.get(id)?.done ?? Promise.resolve();
  }

  /** Fails pending jobs, aborts running ones and waits (bounded) for their runners to return. */
  async close(timeoutMs = 10_000): Promise<void> {
    this.closed = true;
    for (const e of this.entries.values()) {
      if (e.job.status === "pending" || e.job.status === "running") {
        e.controller.abort();
        this.finish(e.job, "failed", "The emulator shut down");
      }
    }
    const all = Promise.all([...this.entries.values()].map((e) => e.done));
    await Promise.race([all, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
  }

  /** A long-running emulator keeps the newest `maxKeptJobs` jobs; the oldest finished ones are forgotten (then 404). */
  private forgetOldest() {
    if (this.entries.size <= this.maxKeptJobs) return;
    for (const [id, e] of this.entries) {
      if (this.entries.size <= this.maxKeptJobs) break;
      if (e.job.finishedAt) this.entries.delete(id);
    }
  }

  private move(job: Job, status: JobStatus) {
    job.status = status;
    job.history.push(status);
  }

  private finish(job: Job, status: "completed" | "failed" | "stopped", error?: string) {
    this.move(job, status);
    job.finishedAt = new Date();
    if (error) job.error = error;
    this.onFinish?.(job);
  }
}
