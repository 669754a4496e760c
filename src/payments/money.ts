// Money at the edges: USD decimal strings in config and display, bigint atomic units (6 decimals) everywhere else.
// The conversions are viem's (parseUnits/formatUnits); this module only fixes the format the gateway accepts and shows.
import { formatUnits, parseUnits } from "viem";

const USD_DECIMALS = 6;

/** "0.005" → 5000n. Accepts what config/fields.ts's usdAmount accepts. Configured amounts are parsed once (./amounts.ts). */
export function usdToAtomic(usd: string): bigint {
  const text = usd.trim();
  if (!/^\d+(?:\.\d{1,6})?$/.test(text)) throw new Error(`not a USD amount: ${usd}`);
  return parseUnits(text, USD_DECIMALS);
}

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
