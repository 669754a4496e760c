// Cache and coalescing savings across the fleet, for the console: every instance adds what its hits and joined calls
// saved to counters in shared state. The hot path only adds to this instance's pending figures; they are written
// FLUSH_MS after the first of them (background work beside that request: waitUntil on Workers) and when the gateway
// closes, so a hit costs no state call. The console reads the counters plus what this instance has not written yet.
import type { GatewayServices } from "../../services.js";
import { stateKeys } from "../../state/keys.js";

/** Answers served from the cache or joined to an identical paid call in flight, and what they would have cost. */
export interface CacheSavings {
  hits: number;
  coalesced: number;
  savedAtomic: bigint;
}

const FLUSH_MS = 2000;
/** Counters live this long after their last change (a year and a bit: "since the fleet started" for a console). */
const TTL_MS = 400 * 86_400_000;

/** The savings services touch: the shared counters (kv), background work beside a request, the gateway's close. */
type SavingsServices = Pick<GatewayServices, "stores" | "background" | "onClose">;

/**
 * This instance's savings not yet written (services.savings, built by createGateway, flushed when it closes). Savings
 * reach it as a money event (src/payments/events.ts, "savings") the operators' listener hears.
 */
export class SavingsCounter {
  /** Figures per tenant not yet written. */
  #figures = new Map<string, CacheSavings>();
  /** The write due FLUSH_MS after the first figure it carries. */
  #due: Promise<void> | undefined;

  constructor(private readonly services: SavingsServices) {
    services.onClose(() => this.#flush());
  }

  /** An answer served from the cache or joined to a call in flight: what it saved, counted for the whole fleet. */
  record(c: Parameters<GatewayServices["background"]>[0], tenant: string, how: "hit" | "coalesced", saved: bigint): void {
    this.#add(tenant, how === "hit" ? 1 : 0, how === "coalesced" ? 1 : 0, saved);
    if (this.#due) return;
    this.#due = new Promise<void>((resolve) => setTimeout(resolve, FLUSH_MS).unref?.())
      .then(() => this.#flush())
      .finally(() => {
        this.#due = undefined;
      });
    this.services.background(c, this.#due, "savings flush");
  }

  /** What this instance has not written yet for `tenant`. */
  unwritten(tenant: string): CacheSavings | undefined {
    return this.#figures.get(tenant);
  }

  async #flush(): Promise<void> {
    if (this.#figures.size === 0) return;
    const batch = this.#figures;
    this.#figures = new Map();
    const { kv } = this.services.stores;
    for (const [tenant, s] of batch) {
      try {
        if (s.hits) await kv.incrBy(stateKeys.savings(tenant, "hits"), s.hits, TTL_MS);
        if (s.coalesced) await kv.incrBy(stateKeys.savings(tenant, "coalesced"), s.coalesced, TTL_MS);
        if (s.savedAtomic) await kv.incrBy(stateKeys.savings(tenant, "saved"), Number(s.savedAtomic), TTL_MS);
      } catch (err) {
        // Kept for the next flush rather than lost (the state backend may be back by then).
        this.#add(tenant, s.hits, s.coalesced, s.savedAtomic);
        throw err;
      }
    }
  }

  #add(tenant: string, hits: number, coalesced: number, savedAtomic: bigint): void {
    let t = this.#figures.get(tenant);
    if (!t) this.#figures.set(tenant, (t = { hits: 0, coalesced: 0, savedAtomic: 0n }));
    t.hits += hits;
    t.coalesced += coalesced;
    if (savedAtomic > 0n) t.savedAtomic += savedAtomic;
  }
}

/** Savings of one tenant, or of all `tenants`, across the fleet (this instance's unwritten figures included). */
export async function fleetSavings(
  services: Pick<GatewayServices, "stores" | "savings">,
  tenants: readonly string[],
): Promise<CacheSavings> {
  const total: CacheSavings = { hits: 0, coalesced: 0, savedAtomic: 0n };
  const { kv } = services.stores;
  await Promise.all(
    tenants.map(async (t) => {
      const [hits, coalesced, saved] = await Promise.all(
        (["hits", "coalesced", "saved"] as const).map((f) => kv.get(stateKeys.savings(t, f))),
      );
      const mine = services.savings.unwritten(t);
      total.hits += Number(hits ?? 0) + (mine?.hits ?? 0);
      total.coalesced += Number(coalesced ?? 0) + (mine?.coalesced ?? 0);
      total.savedAtomic += BigInt(saved ?? 0) + (mine?.savedAtomic ?? 0n);
    }),
  );
  return total;
}
