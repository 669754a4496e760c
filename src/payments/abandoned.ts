// Releases the ledger could not take because its store was out of reach (a Redis restart, a lost answer): remembered
// by this instance and retried on each reconciler pass, so an outage holds budget only as long as it lasts. Nothing was
// signed for them. An instance that dies first leaves them to the stale-hold rule (src/state/holds.ts, 10 minutes).
import type { GatewayServices } from "../services.js";

/** A release the ledger refuses for good: the entry never landed, or was settled meanwhile. */
const FINAL = /^ledger entry .* (not found|is \w+, cannot become released)$/;
/** At most this many remembered per instance (the oldest are left to the stale-hold rule). */
const MAX_PENDING = 10_000;

/** Releases read and write the ledger (stores) at the clock's time; what is pending is services.payments'. */
type ReleaseServices = Pick<GatewayServices, "stores" | "now" | "payments">;

const pending = (services: ReleaseServices) => services.payments.pendingReleases;

/** Releases `id`, or remembers it for the next reconciler pass when the store cannot be reached. */
export async function releaseOrRemember(services: ReleaseServices, id: string, reason: string): Promise<void> {
  try {
    await services.stores.ledger.release(id, reason, services.now());
  } catch (err) {
    if (FINAL.test((err as Error)?.message ?? "")) return;
    remember(services, [id], reason);
    throw err;
  }
}

/** Remembers ids whose reservation may have landed although its answer was lost: released on the next pass. */
export function remember(services: ReleaseServices, ids: readonly string[], reason: string): void {
  const p = pending(services);
  for (const id of ids) {
    if (p.size >= MAX_PENDING) p.delete(p.keys().next().value!);
    p.set(id, reason);
  }
}

/** Retries every remembered release; returns how many the ledger took. Stops at the first store failure. */
export async function retryReleases(services: ReleaseServices): Promise<number> {
  const p = pending(services);
  let released = 0;
  for (const [id, reason] of [...p]) {
    try {
      await services.stores.ledger.release(id, reason, services.now());
      released++;
    } catch (err) {
      if (!FINAL.test((err as Error)?.message ?? "")) break;
    }
    p.delete(id);
  }
  return released;
}
