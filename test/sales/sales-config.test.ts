// [sales]: off unless present; a wrong value is refused naming its exact field; prices as configured (fixed, or the
// credit price with a markup, never below the floor, sessions and sandboxes by the minute).
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { meteredAmount } from "../../src/sales/metered.js";
import { perMinuteOf, priceOf } from "../../src/sales/price.js";

const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const base = (sales: Record<string, unknown>) => ({
  sales: {
    facilitator: "http://127.0.0.1:9/facilitator",
    accept: [{ network: "eip155:84532", asset: TOKEN, name: "USDC", version: "2" }],
    prices: { search: { price: "0.02" } },
    ...sales,
  },
});
const refusal = (raw: unknown) => {
  try {
    parseConfig(raw);
  } catch (err) {
    return String((err as Error).message);
  }
  return "accepted";
};

describe("[sales] config", () => {
  it("is off unless the block is present", () => {
    expect(parseConfig({}).sales).toBeUndefined();
    const on = parseConfig(base({}));
    expect(on.sales).toMatchObject({
      enabled: true,
      maxTimeoutSeconds: 120,
      buyer: { scopes: ["search", "sessions", "sandboxes"], budget: { daily: "5.00" } },
    });
  });

  it("names the exact field of a wrong value", () => {
    expect(refusal(base({ accept: [{ network: "eip155:84532", asset: "0x12", name: "USDC", version: "2" }] }))).toMatch(
      /sales\.accept\[0\]\.asset|sales\.accept\.0\.asset/,
    );
    expect(refusal(base({ facilitator: "ftp://x" }))).toMatch(/sales\.facilitator/);
    expect(refusal(base({ prices: { search: { markupPercent: 5000 } } }))).toMatch(/sales\.prices\.search\.markupPercent/);
    expect(refusal(base({ prices: { search: { price: "0" } } }))).toMatch(/sales\.prices\.search\.price/);
    expect(refusal(base({ prices: { coffee: { price: "1.00" } } }))).toMatch(/sales\.prices/);
    expect(refusal(base({ prices: {} }))).toMatch(/sales\.prices/);
    expect(refusal(base({ buyer: { scopes: ["admin"] } }))).toMatch(/sales\.buyer\.scopes/);
    expect(refusal(base({ accept: [] }))).toMatch(/sales\.accept/);
    // `upto` sells by time: sessions and sandboxes only.
    expect(refusal(base({ prices: { search: { price: "0.02", scheme: "upto" } } }))).toMatch(/sales\.prices\.search\.scheme/);
    expect(refusal(base({ prices: { sandbox: { markupPercent: 10, scheme: "later" } } }))).toMatch(/sales\.prices\.sandbox\.scheme/);
  });

  it("prices a call: fixed, or the credit price with a markup, never below the floor; by the minute for time", () => {
    const cfg = parseConfig(
      base({
        prices: {
          search: { price: "0.02" },
          fetch: { markupPercent: 50, floor: "0.01" },
          session: { markupPercent: 20, minutes: 60 },
          sandbox: { markupPercent: 0 },
        },
      }),
    );
    const p = cfg.sales!.prices;
    expect(priceOf(cfg, "search", p.search!)).toBe(20_000n);
    // webFetch 0.001 × 1.5 = 0.0015, under the 0.01 floor
    expect(priceOf(cfg, "fetch", p.fetch!)).toBe(10_000n);
    // sessionMinute 0.0017 × 60 × 1.2 = 0.1224
    expect(priceOf(cfg, "session", p.session!)).toBe(122_400n);
    // sandboxMinute 0.0017 × credits.defaultTimeoutMinutes (30)
    expect(priceOf(cfg, "sandbox", p.sandbox!)).toBe(51_000n);
  });

  it("settles a time sale for the minutes used: rounded up, at least one, at least the floor, at most what was signed", () => {
    const cfg = parseConfig(
      base({
        prices: {
          session: { markupPercent: 100, minutes: 10, scheme: "upto" },
          sandbox: { price: "0.05", minutes: 10, scheme: "upto", floor: "0.006" },
        },
      }),
    );
    const p = cfg.sales!.prices;
    // 0.0017 × 2 a minute; a fixed 0.05 over 10 minutes is 0.005 a minute.
    expect(perMinuteOf(cfg, "session", p.session!)).toBe(3_400n);
    expect(perMinuteOf(cfg, "sandbox", p.sandbox!)).toBe(5_000n);
    const sale = (perMinute: bigint, floor: bigint, max: bigint) => ({
      perMinuteMicroUsd: perMinute.toString(),
      floorMicroUsd: floor.toString(),
      decimals: 6,
      minutes: 10,
      requirements: { amount: max.toString() } as never,
    });
    const session = sale(3_400n, 0n, 34_000n);
    expect(meteredAmount(session, 0).units).toBe(3_400n);
    expect(meteredAmount(session, 61_000).units).toBe(6_800n);
    expect(meteredAmount(session, 3_600_000).units).toBe(34_000n);
    const sandbox = sale(5_000n, 6_000n, 50_000n);
    expect(meteredAmount(sandbox, 30_000).units).toBe(6_000n);
    expect(meteredAmount(sandbox, 150_000).units).toBe(15_000n);
    // An 18-decimal asset: the same micro-USD, in its units.
    expect(meteredAmount({ ...session, decimals: 18, requirements: { amount: (34_000n * 10n ** 12n).toString() } as never }, 0).units).toBe(
      3_400n * 10n ** 12n,
    );
  });
});
