// Sales that fall due at a time, settled once by whichever instance sweeps first. A time sale's window end (./metered.ts)
// is filed in the shared due index (StateStores.due) when the sale is made; every pass reads what is due and hands each
// item to its queue's handler, which claims it in the shared store before the facilitator settles (so of two instances
// sweeping at once one settles) and removes it once done. Nothing lives in a process: a sale made by an instance that
// restarted, or by a Worker isolate long gone, is settled by the next pass anywhere in the fleet.
//
// Passes run on the reconciler's loop in Node (src/payments/reconcile.ts, payments.reconcileIntervalSeconds) and its
// cron trigger on Workers, and beside requests (`poll`: no timer outside a request there), at most one per interval per
// instance. Other sales due at a time (a job sold by `upto`, settled at its end) register their own queue:
//   services.sales?.due.register("job", async (id) => { /* claim, settle, book */ });
//   await services.sales?.due.schedule("job", id, endsAt);
import type { MiddlewareHandler } from "hono";
import type { GatewayServices } from "../services.js";

/**
 * Settles one due item of a queue. Returns when the item is done with: settled, claimed by another instance, or gone;
 * throws to leave it due for the next pass (the state store or the facilitator could not be reached).
 */
type DueHandler = (id: string) => Promise<unknown>;

/** How many items of a queue one pass settles at most. */
const BATCH = 100;

/** What one pass did. */
export interface SweepReport {
  /** Items handed to their handler and done with. */
  done: number;
  /** Items whose handler threw: still due, for the next pass. */
  failed: number;
}

export class DueSweep {
  private readonly handlers = new Map<string, DueHandler>();
  private lastAt = Number.NEGATIVE_INFINITY;
  private running: Promise<SweepReport> | undefined;

  constructor(
    private readonly services: GatewayServices,
    /** The least time between two passes started by `poll` on this instance. */
    private readonly everyMs: number,
  ) {}

  /** What settles an item of `queue` when it falls due (one handler per queue). */
  register(queue: string, handler: DueHandler): void {
    if (this.handlers.has(queue)) throw new Error(`due queue "${queue}" has a handler already`);
    this.handlers.set(queue, handler);
  }

  /** Files `id` of `queue`, due at `at` (epoch ms), in the fleet's shared index. */
  schedule(queue: string, id: string, at: number): Promise<void> {
    return this.services.stores.due.add(queue, id, at);
  }

  /** Done before it fell due (a stop settled it): out of the index. */
  cancel(queue: string, id: string): Promise<void> {
    return this.services.stores.due.remove(queue, id);
  }

  /** One pass over every registered queue: each item due now to its handler, removed once the handler returned. */
  runOnce(): Promise<SweepReport> {
    // One pass at a time per instance: a pass still running is the one asked for.
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  /** A pass when the last one on this instance is at least the interval old (called as requests come in); else nothing. */
  poll(): Promise<SweepReport> | undefined {
    const now = this.services.now();
    if (this.running || now - this.lastAt < this.everyMs) return undefined;
    return this.runOnce();
  }

  private async pass(): Promise<SweepReport> {
    const { stores, logger } = this.services;
    this.lastAt = this.services.now();
    const report: SweepReport = { done: 0, failed: 0 };
    for (const [queue, handler] of this.handlers) {
      for (const id of await stores.due.due(queue, this.services.now(), BATCH)) {
        try {
          await handler(id);
          await stores.due.remove(queue, id);
          report.done++;
        } catch (err) {
          report.failed++;
          logger.error("due sale not settled; will retry", { queue, id, error: String((err as Error)?.message ?? err) });
        }
      }
    }
    return report;
  }
}

/** The app-level step that starts a sweep when one is due, beside the request (no request waits for it). */
export function sweepBeside(sweep: DueSweep, services: GatewayServices): MiddlewareHandler {
  return function sweepDueSales(c, next) {
    const pass = sweep.poll();
    if (pass) services.background(c, pass, "due sales sweep");
    return next();
  };
}
