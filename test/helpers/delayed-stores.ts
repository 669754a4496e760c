// State stores whose every call waits a set time first, as if the state were that far away: a request's extra latency
// divided by the delay is the number of sequential state round trips on its critical path (work behind the answer
// does not count). Also counts every call, by store and method.
import type { StateStores } from "../../src/state/types.js";

export interface DelayedStores {
  stores: StateStores;
  setDelay(ms: number): void;
  /** Calls made since the last reset, as "store.method" → count. */
  calls(): Record<string, number>;
  reset(): void;
}

const STORES = ["ledger", "ownership", "kv", "idempotency", "rateLimiter", "tenants", "audit", "outbox", "accountSlots"] as const;

export function delayedStores(inner: StateStores): DelayedStores {
  let delay = 0;
  let calls: Record<string, number> = {};
  const wrap = <T extends object>(name: string, target: T): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const v = Reflect.get(t, prop, receiver);
        if (typeof v !== "function") return v;
        return async (...args: unknown[]) => {
          const k = `${name}.${String(prop)}`;
          calls[k] = (calls[k] ?? 0) + 1;
          if (delay > 0) await new Promise((r) => setTimeout(r, delay));
          return (v as (...a: unknown[]) => unknown).apply(t, args);
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
  };
}
