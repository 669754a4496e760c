// The breaker's fleet side (src/upstream/accounts.ts): a breaker opened by an instance's own calls reports when it
// stays open until (published for the fleet); one adopted from the fleet opens until that time without being
// published again, never shortens a longer open period, and half-opens on this instance's clock afterwards.
import { describe, expect, it } from "vitest";
import { Breaker, type BreakerState } from "./breaker.js";

const settings = { failures: 2, window: 4, slowMs: 1000, openMs: 1000 };

function breaker() {
  let now = 10_000;
  const trips: number[] = [];
  const states: BreakerState[] = [];
  const b = new Breaker(
    settings,
    () => now,
    (s) => states.push(s),
    (until) => trips.push(until),
  );
  return { b, trips, states, advance: (ms: number) => (now += ms) };
}

describe("Breaker across a fleet", () => {
  it("publishes its own trip with the time it stays open until", () => {
    const { b, trips } = breaker();
    b.record(true, 1);
    b.record(true, 1);
    expect(b.state).toBe("open");
    expect(trips).toEqual([11_000]);
    expect(b.openUntil).toBe(11_000);
  });

  it("adopts another instance's open state without publishing it, then half-opens for one probe of its own", () => {
    const { b, trips, states, advance } = breaker();
    b.adopt(10_600);
    expect(b.state).toBe("open");
    expect(b.available()).toBe(false);
    expect(trips).toEqual([]);
    expect(states).toEqual(["open"]);
    b.adopt(10_300); // an older publish never shortens it
    expect(b.openUntil).toBe(10_600);
    advance(600);
    expect(b.allow()).toBe(true);
    expect(b.state).toBe("half-open");
    expect(b.allow()).toBe(false); // one probe at a time on this instance
    b.record(false, 1);
    expect(b.state).toBe("closed");
  });

  it("ignores a publish already past", () => {
    const { b } = breaker();
    b.adopt(9_000);
    expect(b.state).toBe("closed");
  });
});
