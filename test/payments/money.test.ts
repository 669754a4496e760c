// Money at the edges (src/payments/money.ts): USD strings in, bigint atomic units inside, the same strings back out.
import { describe, expect, it } from "vitest";
import { atomicToUsd, usdToAtomic } from "../../src/payments/money.js";

describe("USD ↔ atomic units", () => {
  it("shows at least two decimals and every significant one", () => {
    expect(atomicToUsd(5000n)).toBe("0.005");
    expect(atomicToUsd(1_000_000n)).toBe("1.00");
    expect(atomicToUsd(1_500_000n)).toBe("1.50");
    expect(atomicToUsd(123_456_789n)).toBe("123.456789");
    expect(atomicToUsd(0n)).toBe("0.00");
    expect(atomicToUsd(-2_500n)).toBe("-0.0025");
  });

  it("answers the same on every call, also past the amounts it remembers", () => {
    for (let round = 0; round < 2; round++) for (let i = 0n; i < 600n; i++) expect(usdToAtomic(atomicToUsd(i * 1_001n))).toBe(i * 1_001n);
  });

  it("refuses what is not a USD amount", () => {
    for (const bad of ["", "1.2345678", "-1", "1e3", "abc"]) expect(() => usdToAtomic(bad)).toThrow(/not a USD amount/);
  });
});
