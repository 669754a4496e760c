// Work the gateway starts without awaiting it (alert webhooks and their audit records, budget checks, the kill switch,
// tenant store checks, reconciler passes): kept alive on Workers by the request's ExecutionContext.waitUntil, since the
// runtime may otherwise cancel it once the response is sent; tracked until it settles, so closing the gateway can wait
// for it; and logged when it fails instead of being an unhandled rejection.
import type { Context } from "hono";
import type { Logger } from "../log.js";

/** The request's ExecutionContext, or undefined where the runtime passed none (Node, app.request). */
function executionContextOf(c: Context | undefined): { waitUntil(p: Promise<unknown>): void } | undefined {
  if (!c) return undefined;
  try {
    return c.executionCtx; // Hono's getter throws when the context has no ExecutionContext
  } catch {
    return undefined;
  }
}

export class BackgroundWork {
  private readonly pending = new Set<Promise<void>>();

  /**
   * @param contexts false where the runtime never passes an ExecutionContext (Node): no request is asked for one
   */
  constructor(
    private readonly logger: Logger,
    private readonly contexts = true,
  ) {}

  /**
   * Runs `work` beside the request `c` (undefined: beside no request, e.g. a timer): handed to the request's waitUntil
   * when there is one, tracked until it settles, and logged as `what` if it fails (the message only, redacted).
   */
  run(c: Context | undefined, work: Promise<unknown>, what: string): void {
    const tracked: Promise<void> = work
      .then(
        () => undefined,
        (err) => this.logger.error("background work failed", { what, error: String((err as Error)?.message ?? err) }),
      )
      .finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
    if (this.contexts) executionContextOf(c)?.waitUntil(tracked);
  }

  /**
   * Resolves once no work is pending (work started meanwhile included) or `ms` have passed, with how much was left.
   * The gateway waits on it before it closes its state, so a delivery in flight is not cut off.
   */
  async settled(ms: number): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), Math.max(0, ms))));
    while (this.pending.size > 0) {
      if ((await Promise.race([Promise.all(this.pending), deadline])) === "late") break;
    }
    clearTimeout(timer);
    return this.pending.size;
  }
}
