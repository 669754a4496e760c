// State stores whose every call waits a set time first, as if the state were that far away: a request's extra latency
// divided by the delay is the number of sequential state round trips on its critical path (work behind the answer
// does not count). Also counts every call, by store and method, and keeps when each began and ended: `sequential`
// reads from those the longest chain of calls each begun after the one before it ended, a count no slow spell of the
// machine or of the upstream can move (it only spreads calls apart in time; two started together still overlap).
import type { StateStores } from "../../src/state/types.js";

export interface DelayedStores {
  stores: StateStores;
  setDelay(ms: number): void;
  /** Calls made since the last reset, as "store.method" → count. */
  calls(): Record<string, number>;
  reset(): void;
  /**
   * The most calls, begun at or after `from` and ended by `to` (performance.now()), each begun after the one before
   * it ended: the sequential state round trips a request made in that window (calls started at once count as one).
   * With a delay set, two calls started together overlap by it; without one, sequential may read as overlapping.
   * `ignore`: calls ("store.method") known to run behind the answer, left out.
   */
  sequential(from: number, to: number, ignore?: string[]): { count: number; chain: string[] };
}

/** One call: which, when it began and when it was answered (performance.now()). */
interface Timed {
  name: string;
  start: number;
  end: number;
}

/** The longest chain of `calls` in which each begins at or after the end of the one before. */
function longestChain(calls: Timed[]): string[] {
  const sorted = [...calls].sort((a, b) => a.start - b.start);
  const best: string[][] = [];
  for (const [i, c] of sorted.entries()) {
    let longest: string[] = [];
    for (let j = 0; j < i; j++) if (sorted[j]!.end <= c.start && best[j]!.length > longest.length) longest = best[j]!;
    best.push([...longest, c.name]);
  }
  return best.reduce<string[]>((a, b) => (b.length > a.length ? b : a), []);
}

const STORES = ["ledger", "ownership", "kv", "idempotency", "rateLimiter", "tenants", "audit", "outbox", "accountSlots", "due"] as const;

export function delayedStores(inner: StateStores): DelayedStores {
  let delay = 0;
  let calls: Record<string, number> = {};
  const timed: Timed[] = [];
  const wrap = <T extends object>(name: string, target: T): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const v = Reflect.get(t, prop, receiver);
        if (typeof v !== "function") return v;
        return async (...args: unknown[]) => {
          const k = `${name}.${String(prop)}`;
          calls[k] = (calls[k] ?? 0) + 1;
          const start = performance.now();
          if (delay > 0) await new Promise((r) => setTimeout(r, delay));
          try {
            return await (v as (...a: unknown[]) => unknown).apply(t, args);
          } finally {
            if (timed.length >= 10_000) timed.splice(0, 5_000);
            timed.push({ name: k, start, end: performance.now() });
          }
        };
      },
    });
  const stores = { ...inner, ping: () => inner.ping(), close: () => inner.close() } as StateStores;
  for (const s of STORES) (stores as unknown as Record<string, unknown>)[s] = wrap(s, inner[s]);
  return {
    stores,
    setDelay: (ms) => {
      delay = ms;
    },
    calls: () => ({ ...calls }),
    reset: () => {
      calls = {};
    },
    sequential: (from, to, ignore = []) => {
      const chain = longestChain(timed.filter((c) => c.start >= from && c.end <= to && !ignore.includes(c.name)));
      return { count: chain.length, chain };
    },
  };
}
