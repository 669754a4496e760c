// What the upstream reports is screened before it touches money: a figure (credits used, a work count) must be a
// finite, non-negative number, and what it comes to must stay within credits.maxReportMultiple × the hold (or the
// price table's estimate, when larger). A refused report settles its hold to the estimate, the ledger entry names why
// (`refusedReport`), and one alert per entry says what was reported (./credit-reports.ts).
import type { RefusedReason } from "../state/types.js";

/** A report refused: why, the field it came in, and what it said (clipped, for the alert and the log). */
export interface RefusedReport {
  reason: RefusedReason;
  field: string;
  shown: string;
}

/** What an upstream answer says of a figure: nothing (absent or null), a usable number, or a refused value. */
export type Reading = { figure: number; field: string } | { refused: RefusedReport } | undefined;

const SHOWN_MAX = 40;

function shownOf(v: unknown): string {
  let s: string;
  try {
    s = typeof v === "string" ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > SHOWN_MAX ? `${s.slice(0, SHOWN_MAX)}…` : s;
}

export const refusal = (reason: RefusedReason, field: string, v: unknown): { refused: RefusedReport } => ({
  refused: { reason, field, shown: reason === "unreadable" ? "(not JSON)" : typeof v === "number" ? String(v) : shownOf(v) },
});

/** One field's value: absent for undefined or null, a figure for a finite number ≥ 0, refused for anything else. */
export function readFigure(field: string, v: unknown): Reading {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return refusal("not_finite", field, v);
    return v < 0 ? refusal("negative", field, v) : { figure: v, field };
  }
  // A bare NaN or Infinity in the answer reads as the string of its name (src/upstream/records.ts).
  if (v === "NaN" || v === "Infinity" || v === "-Infinity") return refusal("not_finite", field, v);
  return refusal("not_a_number", field, v);
}

/** The first of `fields` (in order) the answer says anything about. */
export function firstReading(fields: Array<[name: string, value: unknown]>): Reading {
  for (const [name, v] of fields) {
    const r = readFigure(name, v);
    if (r) return r;
  }
  return undefined;
}

/** The most a report may come to: `multiple` × the larger of the hold and the estimate (atomic units). */
export function ceilingOf(multiple: number, hold: bigint, estimate: bigint = 0n): bigint {
  return BigInt(multiple) * (hold > estimate ? hold : estimate);
}

/**
 * A reading judged: the cost a usable figure comes to (by `toCost`), or refused (its value, or a cost above
 * `ceiling`); undefined when nothing was said.
 */
export function judgeReading(
  reading: Reading,
  toCost: (figure: number) => bigint,
  ceiling: bigint,
): { cost: bigint } | { refused: RefusedReport } | undefined {
  if (!reading || "refused" in reading) return reading;
  const cost = toCost(reading.figure);
  if (cost > ceiling) return refusal("above_limit", reading.field, reading.figure);
  return { cost };
}
