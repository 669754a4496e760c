// A fleet-wide fixed-window count decided from what this instance knows: the request is answered at once, and the
// hits it admitted are added to the shared counter behind the answer, in batches (docs/rate-limits.md).
import type { RateLimiter } from "../../src/state/types.js";

/** One key's window as this instance knows it. */
interface Window {
  /** The window's start (epoch ms). */
  start: number;
  /** The fleet's count as of the last batch the shared counter answered (it includes every hit of ours it confirmed). */
  known: number;
  /** Hits admitted here, in the batch in flight. */
  sent: number;
  /** Hits admitted here since, not sent yet. */
  unsent: number;
  /** A batch is in flight. */
  syncing: boolean;
  /** The shared counter has answered a batch of this window: until then the instance knows nothing of the fleet's. */
  answered: boolean;
  /** The current run of batches (a run given up on finds a newer number) and when its batch in flight was sent. */
  run: number;
  syncStarted: number;
  /** Requests waiting for the batch in flight (a burst past the unconfirmed allowance). */
  waiters: { resolve: () => void; reject: (err: unknown) => void }[];
  /** Ends the batch's gathering early (a request started waiting for it). */
  wake?: (() => void) | undefined;
}

export interface WindowDecision {
  allowed: boolean;
  limit: number;
  /** What this instance knows is left in the window after this hit. */
  remaining: number;
  /** Epoch ms when the window resets. */
  resetAt: number;
}

/**
 * How many admitted hits an instance may hold that the shared counter has not confirmed yet: 2 % of the limit, at least
 * one. N instances admit at most N × this − 1 above the limit in a window (docs/rate-limits.md#the-bound).
 */
export function unconfirmedAllowance(limit: number): number {
  return Math.max(1, Math.ceil(limit / 50));
}

/** A batch unanswered this long is given up on and its hits sent again (Workers end a request's waitUntil at 30 s). */
const STALLED_MS = 10_000;

/** Past this many keys, windows that ended are dropped when a new one starts. */
const SWEEP_AT = 1024;

/**
 * Per-instance view of fixed windows counted across a fleet. `decide` answers from what the instance knows (the
 * fleet's count at the last batch, plus its own hits since) and never waits for the shared counter, except a request
 * that finds `unconfirmedAllowance(limit)` hits of its instance still unconfirmed (a burst faster than one batch per
 * round trip), or any hit before the window's first answer on this instance: it waits for the batch in flight, then
 * is decided again. The hits admitted are sent behind the answer,
 * one batch in flight per key at a time, each batch carrying every hit admitted while the previous was in flight.
 * A refusal is always right: the fleet's count only grows within a window, and what is known is never above it.
 */
export class FleetWindows {
  private readonly windows = new Map<string, Window>();

  /**
   * @param counter the shared counter (services.stores.rateLimiter)
   * @param behind runs a batch beside the request that admitted its first hit (services.background: waitUntil on
   *   Workers), never awaited by it
   */
  constructor(
    private readonly counter: Pick<RateLimiter, "add">,
    private readonly behind: (work: Promise<void>) => void,
    private readonly now: () => number,
    /**
     * A batch of a window the shared counter has answered before waits this long for more hits to go with it, unless a
     * request waits for it: at most one state call per key this often, not one per request (0: sent at once).
     */
    private readonly gatherMs = 0,
    /**
     * Whether a request that must wait for the fleet's count may wait for another request's batch (Node). false on
     * Workers: workerd may cancel, as hung, a request waiting on a promise another request's I/O settles (a 500), so such a
     * request sends its own hit and is decided on the count that answers it.
     */
    private readonly sharedWaits = true,
  ) {}

  /** Counts one hit of `key` (a limit of `limit` per `windowMs`) now; a promise only when it must wait (above). */
  decide(key: string, limit: number, windowMs: number): WindowDecision | Promise<WindowDecision> {
    const now = this.now();
    const w = this.window(key, Math.floor(now / windowMs) * windowMs, windowMs, now);
    this.unstall(w, now);
    const resetAt = w.start + windowMs;
    const unconfirmed = w.sent + w.unsent;
    if (w.known + unconfirmed >= limit) return { allowed: false, limit, remaining: 0, resetAt };
    // An instance new to the window (a fresh isolate, or a new minute) knows nothing of the fleet's count: one hit goes
    // blind, and the rest wait for its answer; then the full allowance.
    if (unconfirmed >= (w.answered ? unconfirmedAllowance(limit) : 1)) {
      if (!this.sharedWaits) return this.ownHit(key, w, limit, windowMs);
      const answered = new Promise<void>((resolve, reject) => w.waiters.push({ resolve, reject }));
      w.wake?.(); // a batch still gathering goes now
      if (!w.syncing) this.behind(this.sync(key, w, windowMs)); // the last batch failed: this one retries it
      return answered.then(() => this.decide(key, limit, windowMs));
    }
    w.unsent++;
    if (!w.syncing) this.behind(this.sync(key, w, windowMs));
    return { allowed: true, limit, remaining: Math.max(0, limit - (w.known + unconfirmed + 1)), resetAt };
  }

  /**
   * A hit sent by the request that must wait, on its own state call (its own I/O), and decided on the fleet's count that
   * call answers plus this instance's hits not in it yet. A refused hit stays counted (the window is full either way).
   * Hits of this instance still unsent go with the next batch.
   */
  private async ownHit(key: string, w: Window, limit: number, windowMs: number): Promise<WindowDecision> {
    const resetAt = w.start + windowMs;
    const total = await this.counter.add(key, 1, windowMs, w.start);
    w.known = Math.max(w.known, total);
    w.answered = true;
    // This instance's hits not yet in that count (unsent, or in a batch still in flight) count against it too.
    const after = total + w.sent + w.unsent;
    if (after > limit) return { allowed: false, limit, remaining: 0, resetAt };
    return { allowed: true, limit, remaining: limit - after, resetAt };
  }

  /** Keys this instance holds a window for (bounded: ended windows are dropped as new ones start). */
  get size(): number {
    return this.windows.size;
  }

  private window(key: string, start: number, windowMs: number, now: number): Window {
    const w = this.windows.get(key);
    if (w && w.start >= start) return w; // the current window (or a clock stepped back: the newer one stays)
    if (this.windows.size >= SWEEP_AT) {
      for (const [k, old] of this.windows) if (old.start + windowMs <= now && !old.syncing) this.windows.delete(k);
    }
    // A window that ended with hits unsent: they counted for it alone, so they are dropped with it. Its waiters (if a
    // batch is still in flight) are decided again in the new window when it answers.
    const fresh: Window = {
      start,
      known: 0,
      sent: 0,
      unsent: 0,
      syncing: false,
      answered: false,
      run: 0,
      syncStarted: 0,
      waiters: [],
    };
    this.windows.set(key, fresh);
    return fresh;
  }

  /**
   * Sends the window's unsent hits, then again while more came meanwhile; one batch in flight per window. On Workers a
   * run outlives the request whose waitUntil keeps it while traffic keeps coming: if the runtime cuts it off, the next
   * request gives it up after STALLED_MS (unstall) and starts another.
   */
  private async sync(key: string, w: Window, windowMs: number): Promise<void> {
    const run = ++w.run;
    w.syncing = true;
    w.syncStarted = this.now();
    try {
      while (w.unsent > 0) {
        if (this.gatherMs > 0 && w.answered && w.waiters.length === 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, this.gatherMs);
            w.wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          w.wake = undefined;
          if (w.run !== run) return; // given up on meanwhile (unstall): a newer run owns the window and its hits
        }
        const n = w.unsent;
        w.sent = n;
        w.unsent = 0;
        let total: number;
        try {
          total = await this.counter.add(key, n, windowMs, w.start);
        } catch (err) {
          if (w.run !== run) throw err; // given up on already: its hits were put back then
          // The state is out of reach: the hits go back to be sent with the next request's batch, and the requests
          // waiting fail as the state call would have failed them.
          w.unsent += n;
          w.sent = 0;
          for (const waiter of w.waiters.splice(0)) waiter.reject(err);
          throw err;
        }
        w.known = Math.max(w.known, total);
        w.answered = true;
        if (w.run !== run) return; // given up on: a newer run owns the window (its hits were sent again, counted twice)
        w.sent = 0;
        for (const waiter of w.waiters.splice(0)) waiter.resolve();
        w.syncStarted = this.now();
      }
    } finally {
      if (w.run === run) w.syncing = false;
    }
  }

  /**
   * A run whose batch has not answered in STALLED_MS (its request was cut off, or the state hangs) is given up on: its
   * hits go back to be sent again. Should the lost batch land after all, they count twice, which can only refuse early.
   */
  private unstall(w: Window, now: number): void {
    if (!w.syncing || now - w.syncStarted < STALLED_MS) return;
    w.run++;
    w.unsent += w.sent;
    w.sent = 0;
    w.syncing = false;
  }
}
