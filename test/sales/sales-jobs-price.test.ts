// What a sold job costs a wallet (pure logic): its maximum is the meter's reservation (the units the request asks for ×
// the credit price) × the markup; what it settles is the credits it used × the markup, at least the floor, never above
// the maximum, nothing when it used nothing. The jobs price refuses a fixed price, naming the field.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { JOB_ROWS, jobMaxCost, jobUnits } from "../../src/sales/job-offer.js";
import { jobAmount } from "../../src/sales/job-sales.js";
import { SOLD_ROWS } from "../../src/sales/classes.js";

const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const config = (jobs: Record<string, unknown>) =>
  parseConfig({
    sales: {
      facilitator: "http://127.0.0.1:9/facilitator",
      accept: [{ network: "eip155:84532", asset: TOKEN, name: "USDC", version: "2" }],
      prices: { jobs },
    },
  });

describe("jobs sold by the credits they use", () => {
  it("sells every credit-billed job and agent task start, nothing else of theirs", () => {
    const sold = Object.entries(SOLD_ROWS)
      .filter(([, cls]) => cls === "jobs")
      .map(([name]) => name);
    expect(sold).toEqual(expect.arrayContaining(["scrape.start", "scrape.batch.start", "crawl.start", "extract.start"]));
    expect(sold).toEqual(expect.arrayContaining(["web.crawl.start", "web.batchFetch.start", "task.browser-use.start"]));
    expect(sold.every((n) => n.endsWith(".start"))).toBe(true);
  });

  it("counts the units as the meter reserves them", () => {
    const row = (name: string) => JOB_ROWS.get(name)!;
    expect(jobUnits(row("crawl.start").meter, { url: "x", maxPages: 7 })).toBe(7);
    expect(jobUnits(row("crawl.start").meter, { url: "x" })).toBe(10);
    expect(jobUnits(row("scrape.batch.start").meter, { urls: ["a", "b", "c"] })).toBe(3);
    expect(jobUnits(row("web.crawl.start").meter, { url: "x", crawlOptions: { maxPages: 4 } })).toBe(4);
    expect(jobUnits(row("extract.start").meter, { urls: ["a", "b/*"], maxLinks: 5 })).toBe(6);
    expect(jobUnits(row("extract.start").meter, { urls: ["b/*"] })).toBe(10);
    expect(jobUnits(row("scrape.start").meter, { url: "x" })).toBe(1);
    expect(() => jobUnits(row("crawl.start").meter, { maxPages: 10_001 })).toThrow(/at most 10000/);
    // 20 steps × 0.01 a step
    expect(jobMaxCost(config({}), row("task.browser-use.start"), { task: "t" })).toBe(200_000n);
  });

  it("settles the credits used × the markup, at least the floor, at most the maximum, zero for nothing", () => {
    const c = config({ markupPercent: 50, floor: "0.002" });
    const price = c.sales!.prices.jobs!;
    const sale = { decimals: 6, requirements: { amount: "15000" } as never };
    expect(jobAmount(sale, price, 8_000n)).toEqual({ microUsd: 12_000n, units: 12_000n });
    expect(jobAmount(sale, price, 1_000n).units).toBe(2_000n);
    expect(jobAmount(sale, price, 40_000n).units).toBe(15_000n);
    expect(jobAmount(sale, price, 0n)).toEqual({ microUsd: 0n, units: 0n });
  });

  it("refuses a fixed price for jobs, naming the field", () => {
    expect(() => config({ price: "0.10" })).toThrow(/sales\.prices\.jobs\.price/);
  });
});
