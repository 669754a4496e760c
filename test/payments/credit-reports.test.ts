// Pure logic of the books: credits to dollars exactly, a multiplier rounded up, work counts read from job answers,
// and the export's window and CSV.
import { describe, expect, it } from "vitest";
import { creditsToAtomic, multiplierOf, reportedCredits, reportedWork, withMultiplier } from "../../src/payments/credit-reports.js";
import { usageCsv, windowOf } from "../../src/payments/usage-export.js";

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
    expect(reportedWork({ metadata: { numPagesScraped: 9 } })).toBe(9);
    expect(reportedWork({ metadata: { numTaskStepsCompleted: 2 } })).toBe(2);
    expect(reportedWork({ totalCrawledPages: 4 })).toBe(4);
    expect(reportedWork({ data: { steps: [1, 2, 3] } })).toBe(3);
    expect(reportedWork({ status: "completed" })).toBeUndefined();
    expect(reportedWork({ metadata: { numPagesScraped: -1 } })).toBeUndefined();
    expect(reportedCredits({ creditsUsed: 12.5 })).toBe(12.5);
    expect(reportedCredits({ metadata: { creditsUsed: 3 } })).toBe(3);
    expect(reportedCredits({ creditsUsed: null })).toBeUndefined();
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
