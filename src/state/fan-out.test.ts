// The fleet views' helpers: bounded fan-out, and grouping a batch by tenant in one pass.
import { describe, expect, it } from "vitest";
import { bounded, groupBy } from "./fan-out.js";

describe("groupBy", () => {
  it("groups in the items' order, each group in order, with the value asked for", () => {
    const records = [
      { tenant: "b", n: 1 },
      { tenant: "a", n: 2 },
      { tenant: "b", n: 3 },
    ];
    expect([...groupBy(records, (r) => r.tenant)]).toEqual([
      ["b", [records[0], records[2]]],
      ["a", [records[1]]],
    ]);
    expect([
      ...groupBy(
        records,
        (r) => r.tenant,
        (r) => r.n,
      ),
    ]).toEqual([
      ["b", [1, 3]],
      ["a", [2]],
    ]);
    expect(groupBy([], (r: { tenant: string }) => r.tenant).size).toBe(0);
  });

  it("takes a large batch in one pass (ten times a request log's fullest backlog, one tenant)", () => {
    const records = Array.from({ length: 50_000 }, (_, i) => ({ tenant: "t", i }));
    const t0 = performance.now();
    const groups = groupBy(records, (r) => r.tenant);
    expect(groups.get("t")).toHaveLength(50_000);
    expect(performance.now() - t0).toBeLessThan(500); // n²/2 copies (1.25 × 10⁹) took seconds
  });
});

describe("bounded", () => {
  it("runs at most `limit` at once and keeps the items' order", async () => {
    let running = 0;
    let most = 0;
    const out = await bounded([5, 1, 3, 2, 4], 2, async (x) => {
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, x));
      running--;
      return x * 10;
    });
    expect(out).toEqual([50, 10, 30, 20, 40]);
    expect(most).toBe(2);
  });
});
