// What each paid route costs, in atomic units of the 6-decimal token (5000 = $0.005); configurable per emulator.
import type { FetchParams, WebSearchParams } from "../search/index.js";

/** An amount in atomic units: a bigint, or a string of decimal digits. */
export type AtomicAmount = bigint | string;

export interface X402Prices {
  /** One search without `location`. */
  search: AtomicAmount;
  /** One search with `location` (localised results). */
  searchWithLocation: AtomicAmount;
  /** One fetch, before options. */
  fetch: AtomicAmount;
  /** Added for `stealth: "auto"`. */
  fetchStealth: AtomicAmount;
  /** Added for `stealth: "ultra"`. */
  fetchUltraStealth: AtomicAmount;
  /** Added when `browser.location` asks for a geo proxy. */
  fetchProxy: AtomicAmount;
  /** Added when a `json` output is requested. */
  fetchJson: AtomicAmount;
  /** A fetch never costs more than this. */
  fetchMax: AtomicAmount;
  /** Session price by `timeoutMinutes` tier; a timeout between tiers pays for the next tier up. */
  sessionByTimeoutMinutes: Record<number, AtomicAmount>;
}

export const DEFAULT_PRICES: Readonly<X402Prices> = Object.freeze({
  search: 5000n,
  searchWithLocation: 10000n,
  fetch: 1000n,
  fetchStealth: 2000n,
  fetchUltraStealth: 4000n,
  fetchProxy: 5000n,
  fetchJson: 5000n,
  fetchMax: 15000n,
  sessionByTimeoutMinutes: { 5: 10000n, 10: 20000n, 15: 30000n, 30: 50000n, 45: 80000n, 60: 100000n },
});

export interface PriceList {
  search(p: WebSearchParams): bigint;
  fetch(p: FetchParams): bigint;
  session(timeoutMinutes: number): bigint;
  /** The resolved table, all bigint, for display and tests. */
  table: { [K in Exclude<keyof X402Prices, "sessionByTimeoutMinutes">]: bigint } & { sessionByTimeoutMinutes: Array<[number, bigint]> };
}

function atomic(value: AtomicAmount, field: string): bigint {
  if (typeof value === "bigint" && value >= 0n) return value;
  if (typeof value === "string" && /^\d+$/.test(value)) return BigInt(value);
  throw new Error(`prices.${field} must be a non-negative integer amount in atomic units (got ${String(value)})`);
}

/** Checks a partial price table once, at start-up, and answers prices as bigint. */
export function resolvePrices(overrides: Partial<X402Prices> = {}): PriceList {
  const merged = { ...DEFAULT_PRICES, ...overrides };
  const scalar = (k: Exclude<keyof X402Prices, "sessionByTimeoutMinutes">) => atomic(merged[k], k);
  const tiers = Object.entries(merged.sessionByTimeoutMinutes)
    .map(([m, v]) => {
      const minutes = Number(m);
      if (!Number.isInteger(minutes) || minutes <= 0) throw new Error(`prices.sessionByTimeoutMinutes has a bad tier "${m}"`);
      return [minutes, atomic(v, `sessionByTimeoutMinutes.${m}`)] as [number, bigint];
    })
    .sort((a, b) => a[0] - b[0]);
  if (tiers.length === 0) throw new Error("prices.sessionByTimeoutMinutes must have at least one tier");
  const table = {
    search: scalar("search"),
    searchWithLocation: scalar("searchWithLocation"),
    fetch: scalar("fetch"),
    fetchStealth: scalar("fetchStealth"),
    fetchUltraStealth: scalar("fetchUltraStealth"),
    fetchProxy: scalar("fetchProxy"),
    fetchJson: scalar("fetchJson"),
    fetchMax: scalar("fetchMax"),
    sessionByTimeoutMinutes: tiers,
  };
  return {
    table,
    search: (p) => (p.location ? table.searchWithLocation : table.search),
    fetch: (p) => {
      let price = table.fetch;
      if (p.stealth === "auto") price += table.fetchStealth;
      if (p.stealth === "ultra") price += table.fetchUltraStealth;
      if (p.browser?.location && Object.keys(p.browser.location).length > 0) price += table.fetchProxy;
      if (p.outputs?.formats?.some((f) => typeof f === "object" && f.type === "json")) price += table.fetchJson;
      // biome-ignore lint/complexity/useMathMinMax: bigint prices, which Math.min does not take
      return price > table.fetchMax ? table.fetchMax : price;
    },
    session: (minutes) => (tiers.find(([m]) => m >= minutes) ?? tiers[tiers.length - 1])[1],
  };
}
