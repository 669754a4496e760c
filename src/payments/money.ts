// Money at the edges: USD decimal strings in config and display, bigint atomic units (6 decimals) everywhere else.
// The conversions are viem's (parseUnits/formatUnits); this module fixes the format the gateway shows.
import { formatUnits } from "viem";

const USD_DECIMALS = 6;

// Parsing lives with the configuration (config/amounts.ts: every amount is parsed once, when it is loaded).
export { usdToAtomic } from "../../config/amounts.js";

/** Amounts shown lately (a route's price recurs on every answer of it: a cache hit shows it in a header). */
const shown = new Map<bigint, string>();

/** 5000n → "0.005"; always at least two decimals ("1.00"). */
export function atomicToUsd(atomic: bigint): string {
  let usd = shown.get(atomic);
  if (usd === undefined) {
    const [whole, frac = ""] = formatUnits(atomic, USD_DECIMALS).split(".");
    usd = `${whole}.${frac.padEnd(2, "0")}`;
    if (shown.size >= 256) shown.clear();
    shown.set(atomic, usd);
  }
  return usd;
}

export function minBigint(...xs: Array<bigint | undefined>): bigint | undefined {
  let out: bigint | undefined;
  for (const x of xs) if (x !== undefined && (out === undefined || x < out)) out = x;
  return out;
}
