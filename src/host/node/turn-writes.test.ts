// The end of a turn of the event loop, shared by every answer finished in it: one promise a turn, resolved once the
// turn's I/O callbacks have run (after an immediate queued before it, before one queued after), a new one next turn.
import { describe, expect, it } from "vitest";
import { turnEnd } from "./turn-writes.js";

describe("turnEnd", () => {
  it("is one promise for a turn, resolved in the turn's check phase, and a new one the next turn", async () => {
    const order: string[] = [];
    setImmediate(() => order.push("immediate queued before"));
    const a = turnEnd();
    const b = turnEnd();
    expect(a).toBe(b);
    setImmediate(() => order.push("immediate queued after"));
    void a.then(() => order.push("turn ended"));
    await a;
    expect(order).toEqual(["immediate queued before", "turn ended"]);
    const c = turnEnd();
    expect(c).not.toBe(a);
    await c;
    expect(order).toEqual(["immediate queued before", "turn ended", "immediate queued after"]);
  });
});
