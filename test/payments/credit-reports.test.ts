// Pure logic of the books: credits to dollars exactly, a multiplier rounded up, work counts read from job answers
// (and refused when they are no figure or past the ceiling), and the export's window and CSV.
import { describe, expect, it } from "vitest";
import { creditsToAtomic, multiplierOf, reportedCredits, reportedWork, withMultiplier } from "../../src/payments/credit-reports.js";
import { usageCsv, windowOf } from "../../src/payments/usage-export.js";
import { ceilingOf, judgeReading, readFigure } from "../../src/payments/report-screen.js";
import { parseUpstreamJson } from "../../src/upstream/records.js";

describe("credit reports", () => {
  it("turns credits into atomic USD at usdPerCredit, half up, never negative", () => {
    expect(creditsToAtomic(0.1, "0.001")).toBe(100n);
    expect(creditsToAtomic(2.345, "0.001")).toBe(2345n);
    expect(creditsToAtomic(1, "0.0015")).toBe(1500n);
    expect(creditsToAtomic(0.0005, "0.001")).toBe(1n); // half a micro-dollar rounds up
    expect(creditsToAtomic(0.0004, "0.001")).toBe(0n);
    expect(creditsToAtomic(-3, "0.001")).toBe(0n);
    expect(creditsToAtomic(Number.NaN, "0.001")).toBe(0n);
  });

  it("applies a multiplier rounded up to the atomic unit; 1 and none change nothing", () => {
    expect(withMultiplier(1000n, "1.25")).toBe(1250n);
    expect(withMultiplier(33n, "1.25")).toBe(42n); // 41.25 → 42
    expect(withMultiplier(1000n, "0.9")).toBe(900n);
    expect(withMultiplier(1000n, undefined)).toBe(1000n);
    expect(multiplierOf({ creditMultiplier: "1.000" })).toBeUndefined();
    expect(multiplierOf({})).toBeUndefined();
    expect(multiplierOf({ creditMultiplier: "1.1" })).toBe("1.1");
  });

  it("reads the work a job answer counts, and the credits it reports", () => {
    expect(reportedWork({ metadata: { numPagesScraped: 9 } })).toEqual({ figure: 9, field: "metadata.numPagesScraped" });
    expect(reportedWork({ metadata: { numTaskStepsCompleted: 2 } })).toMatchObject({ figure: 2 });
    expect(reportedWork({ totalCrawledPages: 4.7 })).toMatchObject({ figure: 4 });
    expect(reportedWork({ data: { steps: [1, 2, 3] } })).toMatchObject({ figure: 3 });
    expect(reportedWork({ status: "completed" })).toBeUndefined();
    expect(reportedCredits({ creditsUsed: 12.5 })).toMatchObject({ figure: 12.5 });
    expect(reportedCredits({ metadata: { creditsUsed: 3 } })).toEqual({ figure: 3, field: "metadata.creditsUsed" });
    expect(reportedCredits({ creditsUsed: null })).toBeUndefined();
  });

  it("refuses a figure that is negative, not finite or not a number, naming the field and what it said", () => {
    expect(reportedWork({ metadata: { numPagesScraped: -1 } })).toEqual({
      refused: { reason: "negative", field: "metadata.numPagesScraped", shown: "-1" },
    });
    expect(reportedCredits({ creditsUsed: "12" })).toMatchObject({ refused: { reason: "not_a_number", shown: '"12"' } });
    expect(reportedCredits({ creditsUsed: "NaN" })).toMatchObject({ refused: { reason: "not_finite" } });
    expect(reportedCredits({ creditsUsed: Number.POSITIVE_INFINITY })).toMatchObject({ refused: { reason: "not_finite" } });
    expect(reportedCredits({ creditsUsed: { n: 1 } })).toMatchObject({ refused: { reason: "not_a_number", shown: '{"n":1}' } });
    const long = reportedCredits({ creditsUsed: "x".repeat(500) });
    expect(long && "refused" in long && long.refused.shown.length).toBeLessThanOrEqual(41);
    expect(readFigure("creditsUsed", 0)).toEqual({ figure: 0, field: "creditsUsed" });
  });

  it("converts a figure too large for millionths in a double without throwing (1e303 was a RangeError)", () => {
    expect(() => creditsToAtomic(1e303, "0.001")).not.toThrow();
    expect(creditsToAtomic(1e303, "0.001")).toBe(BigInt(1e303) * 1000n);
    expect(creditsToAtomic(Number.MAX_VALUE, "0.001")).toBeGreaterThan(0n);
  });

  it("judges a figure against the ceiling: multiple × the larger of hold and estimate", () => {
    expect(ceilingOf(10, 51_000n, 1_700n)).toBe(510_000n);
    expect(ceilingOf(10, 1_700n, 51_000n)).toBe(510_000n);
    const cost = (n: number) => creditsToAtomic(n, "0.001");
    expect(judgeReading({ figure: 510, field: "creditsUsed" }, cost, 510_000n)).toEqual({ cost: 510_000n });
    expect(judgeReading({ figure: 510.001, field: "creditsUsed" }, cost, 510_000n)).toEqual({
      refused: { reason: "above_limit", field: "creditsUsed", shown: "510.001" },
    });
    expect(judgeReading({ figure: 1e303, field: "creditsUsed" }, cost, 510_000n)).toMatchObject({ refused: { reason: "above_limit" } });
    expect(judgeReading(undefined, cost, 1n)).toBeUndefined();
  });

  it("reads an upstream answer with a bare NaN or Infinity as their names, refusing anything else that is not JSON", () => {
    expect(parseUpstreamJson('{"a":NaN,"b":[Infinity,-Infinity],"c":"NaN, Infinity","d":"q\\"NaN"}')).toEqual({
      a: "NaN",
      b: ["Infinity", "-Infinity"],
      c: "NaN, Infinity",
      d: 'q"NaN',
    });
    expect(parseUpstreamJson('{"a":1}')).toEqual({ a: 1 });
    expect(() => parseUpstreamJson("<html>")).toThrow(SyntaxError);
    expect(() => parseUpstreamJson("{NaN}")).toThrow(SyntaxError);
  });
});

describe("usage export", () => {
  const now = Date.UTC(2026, 10, 24, 12);
  it("defaults to this UTC month so far and refuses a bad window naming the field", () => {
    expect(windowOf({}, now)).toEqual({ from: Date.UTC(2026, 10, 1), to: now + 1 });
    expect(() => windowOf({ from: "soon" }, now)).toThrow(/from: expected an ISO-8601 date/);
    expect(() => windowOf({ from: "2026-11-02", to: "2026-11-01" }, now)).toThrow(/to must be after from/);
    expect(() => windowOf({ from: "2024-01-01", to: "2026-01-01" }, now)).toThrow(/366 days/);
  });

  it("takes a bare date `to` as that whole day (one day: from D to D), a date-time `to` as exclusive", () => {
    expect(windowOf({ from: "2026-11-24", to: "2026-11-24" }, now)).toEqual({ from: Date.UTC(2026, 10, 24), to: Date.UTC(2026, 10, 25) });
    expect(windowOf({ from: "2026-11-24", to: "2026-11-24T12:00:00Z" }, now)).toEqual({
      from: Date.UTC(2026, 10, 24),
      to: Date.UTC(2026, 10, 24, 12),
    });
  });

  it("writes RFC 4180 CSV", () => {
    const row = {
      tenant: "a",
      day: "2026-11-24",
      kind: "credits",
      route: 'odd,"route"',
      entries: 2,
      amountUsd: "0.01",
      committedUsd: "0.01",
      heldUsd: "0.00",
      costUsd: "0.01",
    };
    const csv = usageCsv({ from: "", to: "", currency: "USD", rows: [row], entries: 2, totalUsd: "0.01" });
    expect(csv).toBe(
      'tenant,day,kind,route,entries,amountUsd,committedUsd,heldUsd,costUsd\r\na,2026-11-24,credits,"odd,""route""",2,0.01,0.01,0.00,0.01\r\n',
    );
  });
});
