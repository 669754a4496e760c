// Durable Object calls per request class inside workerd, and how many of them a request waits for (the harness, shared
// with `npm run bench -- state`, is test/helpers/durable-round-trips.ts: every stub call counted and first delayed).
// Prints one `durable objects <class>: …` line per class, and holds each class to its target by the calls it made in
// sequence (counted, not timed).
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";
import { durableObjectRoundTrips } from "../helpers/durable-round-trips.js";

const stack = inject("stack");

describe("Durable Object calls per request class (workerd)", () => {
  it("cache hit 0, control read of an own sandbox 0, creation ≤ 1 (a sandbox: 1 after its reservation), runtime 0, paid miss ≤ 1", async () => {
    // The example configuration's tenant: a rate limit of 600 a minute (decided in the isolate, counted behind the
    // answer), quotas, a payment policy, a budget, request logs.
    const own = { ...stack, walletKey: stack.mcpWalletKey, tenant: stack.exampleTenant };
    // Five requests a class at each delay (the paid misses seven), as the bench: with three, a load average of 20 left
    // the fastest of either side apart by more than one 80 ms call on classes that make none.
    const figures = await durableObjectRoundTrips(worker, env as Record<string, unknown>, own, {
      runs: 5,
      log: (line) => console.log(line),
    });
    // Counted, not timed (ClassFigure.sequential): the longest chain of calls each begun after the last ended, the
    // fewest over the delayed requests. A slow upstream or a loaded host moves the latencies (the time-based figure,
    // printed beside it, once failed here on a loaded CI host) but cannot make calls sent at once sequential.
    const sequential = Object.fromEntries(figures.map((f) => [f.name, f.sequential]));
    const chain = (name: string) => figures.find((f) => f.name === name)!.chain.join(" → ");
    expect(sequential["paid search hit"], chain("paid search hit")).toBe(0);
    // The coalescing claim and the hold reserved ahead (the ledger index object written alongside the tenant's ledger
    // object) at once, beside the unpaid first call (docs/paid-round-trips.md).
    expect(sequential["paid search miss"], chain("paid search miss")).toBeLessThanOrEqual(1);
    // A keyless token's cap, the stopped check and the tenant's reservation at once (src/payments/spend.ts), after the
    // upstream's 402; the tenant snapshot's poll (due every 250 ms) goes beside the unpaid first call, so the calls
    // read two in sequence while the request waits for one (the time-based figure printed: 1 on a quiet host).
    const capped = "paid search miss (capped token, stop tenant)";
    expect(sequential[capped], chain(capped)).toBeLessThanOrEqual(2);
    expect(sequential["creation (profile)"], chain("creation (profile)")).toBeLessThanOrEqual(1);
    // A sandbox: the credit reservation before the upstream call (money, held before anything is spent), then the
    // claim (with the example tenant's quota counted in it), the hold attached and kept, the runtime credential: at once.
    expect(sequential["creation (sandbox)"], chain("creation (sandbox)")).toBeLessThanOrEqual(2);
    expect(sequential["creation (sandbox, no quota)"], chain("creation (sandbox, no quota)")).toBeLessThanOrEqual(2);
    expect(sequential["control read"], chain("control read")).toBe(0);
    expect(sequential["runtime call (bound token)"], chain("runtime call (bound token)")).toBe(0);
    // The claim and the reservation at once; the commit behind the answer.
    expect(sequential["credit call"], chain("credit call")).toBeLessThanOrEqual(1);
  }, 360_000);
});
