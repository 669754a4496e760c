// The sweep's bookkeeping (pure logic over memory stores; the fleet and the chain are in test/sales/sales-durable.test.ts):
// only what is due reaches its handler, an item whose handler threw stays due, a pass at a time per instance, and
// requests start a pass at most once per interval.
import { describe, expect, it } from "vitest";
import { memoryStores } from "../state/memory.js";
import { Logger, Redactor } from "../log.js";
import type { GatewayServices } from "../services.js";
import { DueSweep } from "./due.js";

function sweepAt(everyMs = 1000) {
  let t = 1_000_000;
  const stores = memoryStores(() => t);
  const lines: string[] = [];
  const services = {
    stores,
    now: () => t,
    logger: new Logger((l) => lines.push(l), "error", new Redactor()),
  } as unknown as GatewayServices;
  return { sweep: new DueSweep(services, everyMs), stores, lines, advance: (ms: number) => (t += ms), now: () => t };
}

describe("DueSweep", () => {
  it("hands each due item to its queue's handler and forgets it; an item whose handler threw stays due", async () => {
    const { sweep, stores, lines, now } = sweepAt();
    const seen: string[] = [];
    sweep.register("time", async (id) => {
      seen.push(id);
      if (id === "flaky") throw new Error("facilitator unreachable");
    });
    await sweep.schedule("time", "a", now() - 1);
    await sweep.schedule("time", "flaky", now());
    await sweep.schedule("time", "later", now() + 60_000);
    await sweep.schedule("other", "x", now());
    expect(await sweep.runOnce()).toEqual({ done: 1, failed: 1 });
    expect(seen).toEqual(["a", "flaky"]);
    expect(await stores.due.due("time", now() + 60_000, 10)).toEqual(["flaky", "later"]);
    // A queue nobody registered is left alone (another version of the gateway may own it).
    expect(await stores.due.due("other", now(), 10)).toEqual(["x"]);
    expect(lines.join("\n")).toContain("facilitator unreachable");
  });

  it("cancels an item settled before it fell due; one handler per queue", async () => {
    const { sweep, now } = sweepAt();
    const seen: string[] = [];
    sweep.register("time", async (id) => void seen.push(id));
    expect(() => sweep.register("time", async () => {})).toThrow(/has a handler already/);
    await sweep.schedule("time", "stopped", now());
    await sweep.cancel("time", "stopped");
    await sweep.runOnce();
    expect(seen).toEqual([]);
  });

  it("runs one pass at a time, and beside requests at most once per interval", async () => {
    const { sweep, advance, now } = sweepAt(1000);
    let calls = 0;
    let release = () => {};
    sweep.register("time", () => {
      calls++;
      return new Promise<void>((r) => (release = r));
    });
    await sweep.schedule("time", "a", now());
    const first = sweep.poll()!;
    expect(first).toBeDefined();
    await new Promise((r) => setTimeout(r, 10));
    // Still running: a second pass is the same one, and a request starts none.
    expect(sweep.runOnce()).toBe(first);
    expect(sweep.poll()).toBeUndefined();
    release();
    expect(await first).toEqual({ done: 1, failed: 0 });
    expect(calls).toBe(1);
    expect(sweep.poll()).toBeUndefined();
    advance(1000);
    expect(sweep.poll()).toBeDefined();
  });
});
