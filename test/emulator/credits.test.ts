// The emulator's credit schedule (pure logic): its defaults disagree with the gateway's price table on every row, a
// resource's usage lands late when told to, a job is charged for what it did, and a bad schedule names its field.
import { describe, expect, it } from "vitest";
import { CreditMeter, DEFAULT_CREDIT_SCHEDULE, parseCreditSchedule } from "../../emulator/credits.js";
import { jobCredits } from "../../emulator/jobs/index.js";
import type { Job } from "../../emulator/jobs/job-store.js";
import { CREDIT_PRICE_DEFAULTS } from "../../config/schema.js";

/** The gateway's default usdPerCredit. */
const USD_PER_CREDIT = 0.001;

describe("the emulator's credit schedule", () => {
  it("differs from the gateway's default price table on every row it charges, so the two can be seen to disagree", () => {
    const s = DEFAULT_CREDIT_SCHEDULE;
    const pairs: Array<[string, number, string]> = [
      ["session minute", s.browserMinute, CREDIT_PRICE_DEFAULTS.sessionMinute],
      ["sandbox minute (2 vCPU, 2 GiB)", 2 * s.sandboxVcpuMinute + 2 * s.sandboxGiBMinute, CREDIT_PRICE_DEFAULTS.sandboxMinute],
      ["scrape page", s.scrapePage, CREDIT_PRICE_DEFAULTS.scrapePage],
      ["crawl page", s.scrapePage, CREDIT_PRICE_DEFAULTS.crawlPage],
      ["extract page", s.extractPage, CREDIT_PRICE_DEFAULTS.extract],
      ["web page", s.fetchPage, CREDIT_PRICE_DEFAULTS.webPage],
      ["agent step", s.agentStep, CREDIT_PRICE_DEFAULTS.agentStep],
      ["search", s.search, CREDIT_PRICE_DEFAULTS.webSearch],
    ];
    for (const [what, credits, usd] of pairs) expect(credits * USD_PER_CREDIT, what).not.toBeCloseTo(Number(usd), 6);
  });

  it("charges a session by the second and a sandbox by vCPU and memory time, in thousandths of a credit", () => {
    const m = new CreditMeter();
    expect(m.session(0, 90_000, 0)).toEqual({ creditsUsed: 3, browserTimeCreditsUsed: 3, proxyDataCreditsUsed: 0 });
    expect(m.session(0, 1_000, 2_500_000)).toEqual({ creditsUsed: 25.033, browserTimeCreditsUsed: 0.033, proxyDataCreditsUsed: 25 });
    expect(m.sandbox(0, 120_000, 4, 1024)).toBe(4.5);
  });

  it("counts a resource in the team's usage only once its usage has landed", () => {
    const m = new CreditMeter({ lateUsageMs: 5_000 });
    let ended: number | undefined;
    m.addSource(() => (m.landed(ended) ? 7 : 0));
    m.charge(1.5);
    expect(m.usage()).toBe(1.5);
    ended = Date.now();
    expect(m.landed(ended, ended + 4_999)).toBe(false);
    expect(m.landed(ended, ended + 5_000)).toBe(true);
    expect(m.usage()).toBe(1.5);
  });

  it("charges a job for the pages it loaded or the steps it ran, and a failed job nothing", () => {
    const s = DEFAULT_CREDIT_SCHEDULE;
    const job = (over: Partial<Job>): Job => ({
      id: "j",
      status: "completed",
      history: [],
      params: {},
      createdAt: new Date(),
      pages: [],
      signal: new AbortController().signal,
      kind: "scrape",
      ...over,
    });
    const pages = [{ status: "completed" }, { status: "failed" }, { status: "completed" }];
    expect(jobCredits(job({ kind: "crawl", pages }), s)).toBe(2 * s.scrapePage);
    expect(jobCredits(job({ kind: "web-crawl", pages }), s)).toBe(2 * s.fetchPage);
    expect(jobCredits(job({ kind: "extract", metadata: { numPagesScraped: 9 } }), s)).toBe(9 * s.extractPage);
    expect(jobCredits(job({ kind: "task/browser-use", status: "stopped", metadata: { numTaskStepsCompleted: 2 } }), s)).toBe(
      2 * s.agentStep,
    );
    expect(jobCredits(job({ kind: "scrape", data: {} }), s)).toBe(s.scrapePage);
    expect(jobCredits(job({ kind: "crawl", status: "failed", pages }), s)).toBe(0);
  });

  it("reads a schedule from JSON, naming a wrong field", () => {
    expect(parseCreditSchedule('{"browserMinute": 3, "lateUsageMs": 100}')).toEqual({ browserMinute: 3, lateUsageMs: 100 });
    expect(() => parseCreditSchedule("[]")).toThrow(/expected a JSON object/);
    expect(() => parseCreditSchedule('{"browserMinute": -1}')).toThrow(/--credits\.browserMinute: expected a non-negative number/);
    expect(() => parseCreditSchedule('{"nope": 1}')).toThrow(/--credits\.nope: unknown/);
  });
});
