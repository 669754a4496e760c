import { describe, expect, it, vi } from "vitest";
import type { RequestLog, RequestRecord } from "../state/types.js";
import { RequestRecorder } from "./request-recorder.js";

const record = (i: number): RequestRecord => ({
  id: `r${i}`,
  at: i,
  tenant: "t",
  method: "GET",
  route: "runtime.processes.list",
  path: "/sandbox/s/processes",
  status: 200,
  durationMs: 1,
});

/** A request log that keeps each append's batch, and a recorder on it whose background work is collected. */
function recorder(keep = 100) {
  const batches: string[][] = [];
  const log: RequestLog = {
    async append(records) {
      batches.push(records.map((r) => r.id));
    },
    async list() {
      return [];
    },
  };
  const work: Promise<unknown>[] = [];
  const r = new RequestRecorder({ log, keep, background: (_c, w) => void work.push(w), now: Date.now });
  return { r, batches, settled: () => Promise.all(work) };
}

describe("RequestRecorder: writes in batches beside the requests", () => {
  it("writes the records of a burst together, one write for all of them", async () => {
    const { r, batches, settled } = recorder();
    for (let i = 0; i < 20; i++) {
      r.record(undefined, record(i));
      await Promise.resolve(); // each request ends in a turn of its own
    }
    expect(batches).toEqual([]); // nothing written in the requests' own turns
    await settled();
    expect(batches).toEqual([Array.from({ length: 20 }, (_, i) => `r${i}`)]);
  });

  it("writes what waits at once on flush (a read on the instance sees its own requests)", async () => {
    // The clock stands still: flush cannot be waiting for the batch's 50 ms.
    vi.useFakeTimers();
    try {
      const { r, batches } = recorder();
      r.record(undefined, record(1));
      r.record(undefined, record(2));
      await r.flush();
      expect(batches.flat()).toEqual(["r1", "r2"]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("records that come while a batch is written go in the next one; keep 0 records nothing", async () => {
    const { r, batches, settled } = recorder();
    r.record(undefined, record(1));
    await settled();
    r.record(undefined, record(2));
    r.record(undefined, record(3));
    await settled();
    expect(batches).toEqual([["r1"], ["r2", "r3"]]);
    const off = recorder(0);
    off.r.record(undefined, record(4));
    await off.settled();
    await off.r.flush();
    expect(off.batches).toEqual([]);
  });
});
