// Money at the edges: USD decimal strings in config and display, bigint atomic units (6 decimals) everywhere else.

/** "0.005" → 5000n. Accepts what config/schema.ts's usdAmount accepts. */
export function usdToAtomic(usd: string): bigint {
  const m = /^(\d+)(?:\.(\d{1,6}))?$/.exec(usd.trim());
  if (!m) throw new Error(`not a USD amount: ${usd}`);
  return BigInt(m[1]) * 1_000_000n + BigInt((m[2] ?? "").padEnd(6, "0"));
}

/** 5000n → "0.005"; always at least two decimals ("1.00"). */
export function atomicToUsd(atomic: bigint): string {
  const neg = atomic < 0n;
  const a = neg ? -atomic : atomic;
  const whole = a / 1_000_000n;
  let frac = (a % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  if (frac.length < 2) frac = frac.padEnd(2, "0");
  return `${neg ? "-" : ""}${whole}.${frac}`;
}

export function minBigint(...xs: Array<bigint | undefined>): bigint | undefined {
  let out: bigint | undefined;
  for (const x of xs) if (x !== undefined && (out === undefined || x < out)) out = x;
  return out;
}
