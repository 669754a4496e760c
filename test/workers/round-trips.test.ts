// Durable Object calls per request class inside workerd, and how many of them a request waits for (the harness, shared
// with `npm run bench -- state`, is test/helpers/durable-round-trips.ts: every stub call counted and first delayed).
// Prints one `durable objects <class>: …` line per class.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/platform/worker.js";
import { durableObjectRoundTrips } from "../helpers/durable-round-trips.js";

const stack = inject("stack");

describe("Durable Object calls per request class (workerd)", () => {
  it("cache hit 0, control read of an own sandbox 0, creation ≤ 1, runtime 0, paid miss ≤ 4, credit call ≤ 6 waited for", async () => {
    const figures = await durableObjectRoundTrips(
      worker,
      env as Record<string, unknown>,
      { ...stack, walletKey: stack.mcpWalletKey },
      {
        log: (line) => console.log(line),
      },
    );
    const waited = Object.fromEntries(figures.map((f) => [f.name, f.waited]));
    expect(waited["paid search hit"]).toBe(0);
    // One more than on Redis: a reservation writes the ledger index object before the tenant's ledger object (so an
    // entry is always found by its id), two calls where Redis runs one script (issue 44 item 2 reshapes these objects).
    // The same for a credit call (5 on Redis).
    expect(waited["paid search miss"]).toBeLessThanOrEqual(4);
    expect(waited["creation (profile)"]).toBeLessThanOrEqual(1);
    expect(waited["credit call"]).toBeLessThanOrEqual(6);
    expect(waited["control read"]).toBe(0);
    expect(waited["runtime call (bound token)"]).toBe(0);
  }, 120_000);
});
