// FleetWindows against the memory store's real shared counter, with each batch held in flight until the test lets it
// land: the decision never waits for it, a refusal is never wrong, and N instances admit at most N × the unconfirmed
// allowance − 1 above the limit however the batches and the hits interleave (docs/rate-limits.md#the-bound).
import { describe, expect, it } from "vitest";
import { memoryStores } from "../../src/state/memory.js";
import type { RateLimiter } from "../../src/state/types.js";
import { FleetWindows, unconfirmedAllowance, type WindowDecision } from "./fleet-windows.js";

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 2, 10, 12, 0, 5);

/** The shared counter with every `add` held until `land()` lets one through (in the order the test picks). */
function heldCounter(inner: RateLimiter) {
  const held: { run: () => void }[] = [];
  let failing = false;
  const counter: Pick<RateLimiter, "add"> = {
    add: (key, n, windowMs, now) =>
      new Promise<number>((resolve, reject) => {
        held.push({
          run: () => (failing ? reject(new Error("state unavailable")) : inner.add(key, n, windowMs, now).then(resolve, reject)),
        });
      }),
  };
  return {
    counter,
    held,
    /** Lets the batch at `i` land (its answer is read after the microtasks that follow). */
    land: async (i = 0) => {
      const [b] = held.splice(i, 1);
      b?.run();
      for (let k = 0; k < 10; k++) await Promise.resolve();
    },
    setFailing: (f: boolean) => {
      failing = f;
    },
  };
}

/** A small deterministic PRNG (mulberry32), so a failing seed can be replayed. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One instance as the Worker entry runs it (no shared waits), its counter held, its batches collected in `work`. */
function workersFleet() {
  const stores = memoryStores();
  const c = heldCounter(stores.rateLimiter);
  const work: Promise<void>[] = [];
  return {
    stores,
    c,
    work,
    w: new FleetWindows(
      c.counter,
      (p) => work.push(p),
      () => T0,
      20,
      false,
    ),
  };
}

describe("FleetWindows", () => {
  it("decides at once while the batch is in flight, and counts every hit it admitted in the shared counter", async () => {
    const stores = memoryStores();
    const c = heldCounter(stores.rateLimiter);
    const work: Promise<void>[] = [];
    const w = new FleetWindows(
      c.counter,
      (p) => work.push(p),
      () => T0,
    );
    const limit = 600; // the example configuration's tenant: an allowance of 12
    // New to the window, the instance lets one hit go blind; a second waits for its answer.
    expect(w.decide("tenant:a", limit, MINUTE)).toMatchObject({ allowed: true, remaining: 599 });
    const second = w.decide("tenant:a", limit, MINUTE);
    expect(second).toBeInstanceOf(Promise);
    await c.land();
    expect(await second).toMatchObject({ allowed: true, remaining: 598 });
    await c.land();
    const first: WindowDecision[] = [];
    for (let i = 0; i < unconfirmedAllowance(limit); i++) {
      const d = w.decide("tenant:a", limit, MINUTE);
      expect(d).not.toBeInstanceOf(Promise);
      first.push(d as WindowDecision);
    }
    expect(first.map((d) => d.remaining)).toEqual(Array.from({ length: 12 }, (_, i) => 597 - i));
    expect(first.every((d) => d.allowed && d.resetAt === T0 - 5000 + MINUTE)).toBe(true);
    // One batch in flight carrying the first hit; the eleven after it wait to go in the next one.
    expect(c.held).toHaveLength(1);
    // A thirteenth unconfirmed hit would pass the allowance: it waits for the batch in flight, then is decided.
    const waiting = w.decide("tenant:a", limit, MINUTE);
    expect(waiting).toBeInstanceOf(Promise);
    await c.land();
    expect(c.held).toHaveLength(1); // the next batch: the eleven
    expect(await waiting).toMatchObject({ allowed: true, remaining: 585 });
    while (c.held.length > 0) await c.land();
    await Promise.all(work);
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(15);
  });

  it("gathers an answered window's hits for gatherMs into one batch, and sends at once for a request that waits", async () => {
    const stores = memoryStores();
    const adds: number[] = [];
    const counter: Pick<RateLimiter, "add"> = {
      add: (key, n, windowMs, now) => (adds.push(n), stores.rateLimiter.add(key, n, windowMs, now)),
    };
    const work: Promise<void>[] = [];
    const w = new FleetWindows(
      counter,
      (p) => work.push(p),
      () => T0,
      40,
    );
    const limit = 600; // an allowance of 12
    // The window's first hit goes at once (nobody knows the fleet's count yet): no gathering before an answer.
    w.decide("tenant:a", limit, MINUTE);
    await Promise.all(work.splice(0));
    expect(adds).toEqual([1]);
    // Answered: the next hits gather for 40 ms and go as one batch, not one state call each.
    const started = performance.now();
    for (let i = 0; i < 5; i++) expect(w.decide("tenant:a", limit, MINUTE)).not.toBeInstanceOf(Promise);
    expect(work).toHaveLength(1);
    await Promise.all(work.splice(0));
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    expect(adds).toEqual([1, 5]);
    // Past the allowance a request waits: the gathering batch goes at once for it.
    for (let i = 0; i < unconfirmedAllowance(limit); i++) w.decide("tenant:a", limit, MINUTE);
    const t = performance.now();
    const waiting = w.decide("tenant:a", limit, MINUTE);
    expect(waiting).toBeInstanceOf(Promise);
    expect(await waiting).toMatchObject({ allowed: true });
    expect(performance.now() - t).toBeLessThan(30);
    await Promise.all(work.splice(0));
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(1 + 5 + 12 + 1);
  });

  it("refuses only what the fleet has already counted, with nothing sent for a refusal", async () => {
    const stores = memoryStores();
    await stores.rateLimiter.add("tenant:a", 5, MINUTE, T0); // another instance's hits
    const c = heldCounter(stores.rateLimiter);
    const w = new FleetWindows(
      c.counter,
      () => {},
      () => T0,
    );
    expect(w.decide("tenant:a", 6, MINUTE)).toMatchObject({ allowed: true, remaining: 5 }); // not known yet
    await c.land(); // the batch answers 6: the fleet's count is known
    expect(w.decide("tenant:a", 6, MINUTE)).toMatchObject({ allowed: false, remaining: 0 });
    expect(c.held).toHaveLength(0);
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(6);
  });

  it("counts a fresh instance's one blind hit per window, however many instances come and go", async () => {
    // Isolates started and dropped (a Worker under load): each new one admits one hit before it knows the count.
    const stores = memoryStores();
    const c = heldCounter(stores.rateLimiter);
    let admitted = 0;
    for (let i = 0; i < 40; i++) {
      const fresh = new FleetWindows(
        c.counter,
        () => {},
        () => T0,
      );
      const d = fresh.decide("tenant:a", 10, MINUTE);
      expect(d).not.toBeInstanceOf(Promise);
      if ((d as WindowDecision).allowed) admitted++;
      if (i % 4 === 3) while (c.held.length > 0) await c.land(); // some answer before their isolate is dropped
    }
    expect(admitted).toBe(40); // each knew nothing: the bound counts every instance that served in the window
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(40);
  });

  it("gives up on a batch that never answers (a request cut off) and sends its hits again, counted twice at worst", async () => {
    const stores = memoryStores();
    const c = heldCounter(stores.rateLimiter);
    const clock = { now: T0 };
    const w = new FleetWindows(
      c.counter,
      (p) => void p.catch(() => {}),
      () => clock.now,
    );
    expect(w.decide("tenant:a", 600, MINUTE)).toMatchObject({ allowed: true }); // its batch never lands
    const lost = c.held.splice(0, 1)[0]!;
    clock.now += 5_000;
    expect(w.decide("tenant:a", 600, MINUTE)).toBeInstanceOf(Promise); // still waiting for the first answer
    clock.now += 6_000; // 11 s since the batch was sent
    const after = w.decide("tenant:a", 600, MINUTE);
    expect(c.held).toHaveLength(1); // a new run: the three hits, sent again
    await c.land();
    expect(await after).toMatchObject({ allowed: true });
    while (c.held.length > 0) await c.land();
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(3);
    lost.run(); // the lost batch lands after all: its hit counts twice, which can only refuse early
    await new Promise((r) => setTimeout(r, 0));
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(4);
    expect(w.decide("tenant:a", 600, MINUTE)).toMatchObject({ allowed: true });
  });

  it("starts afresh when the window turns, and drops what ended", async () => {
    const stores = memoryStores();
    const clock = { now: T0 };
    const w = new FleetWindows(
      stores.rateLimiter,
      () => {},
      () => clock.now,
    );
    for (let i = 0; i < 3; i++) await w.decide("tenant:a", 3, MINUTE);
    await new Promise((r) => setTimeout(r, 0));
    expect(w.decide("tenant:a", 3, MINUTE)).toMatchObject({ allowed: false });
    clock.now += MINUTE;
    expect(w.decide("tenant:a", 3, MINUTE)).toMatchObject({ allowed: true, remaining: 2, resetAt: T0 - 5000 + 2 * MINUTE });
    expect(w.size).toBe(1);
  });

  it("puts a failed batch's hits back, fails the requests waiting on it, and sends the hits with the next batch", async () => {
    const stores = memoryStores();
    const c = heldCounter(stores.rateLimiter);
    const failures: unknown[] = [];
    const w = new FleetWindows(
      c.counter,
      (p) => void p.catch((e) => failures.push(e)),
      () => T0,
    );
    expect(w.decide("tenant:a", 50, MINUTE)).toMatchObject({ allowed: true }); // allowance 1 (and new to the window)
    const waiting = w.decide("tenant:a", 50, MINUTE);
    expect(waiting).toBeInstanceOf(Promise);
    c.setFailing(true);
    await c.land();
    await expect(waiting).rejects.toThrow("state unavailable");
    expect(failures).toHaveLength(1);
    c.setFailing(false);
    // The next request finds the hit still unconfirmed: it starts the batch again and waits for it.
    const next = w.decide("tenant:a", 50, MINUTE);
    expect(next).toBeInstanceOf(Promise);
    await c.land();
    expect(await next).toMatchObject({ allowed: true, remaining: 48 });
    while (c.held.length > 0) await c.land();
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(2);
  });

  it("with no shared waits (Workers), a request that must wait sends its own hit and is decided on its answer", async () => {
    const { stores, c, work, w } = workersFleet();
    // A window new to the instance: the first hit goes blind (its batch in flight), the next must know the fleet's count.
    expect(w.decide("tenant:a", 5, MINUTE)).toMatchObject({ allowed: true });
    const waited = w.decide("tenant:a", 5, MINUTE);
    expect(waited).toBeInstanceOf(Promise);
    // Its own state call, not the first request's batch: it is decided when its own call answers, the batch still held.
    expect(c.held).toHaveLength(2);
    let decided: WindowDecision | undefined;
    void (waited as Promise<WindowDecision>).then((d) => (decided = d));
    await c.land(1);
    expect(decided).toMatchObject({ allowed: true, limit: 5 });
    await c.land(0);
    await Promise.all(work);
    expect(await stores.rateLimiter.add("tenant:a", 0, MINUTE, T0)).toBe(2);
    // Past the limit on the count its own call answers: refused (that hit stays counted; the window is full either way).
    for (let i = 0; i < 3; i++) await stores.rateLimiter.add("tenant:a", 1, MINUTE, T0);
    const fresh = new FleetWindows(
      c.counter,
      () => {},
      () => T0,
      20,
      false,
    );
    expect(fresh.decide("tenant:a", 5, MINUTE)).toMatchObject({ allowed: true });
    const late = fresh.decide("tenant:a", 5, MINUTE) as Promise<WindowDecision>;
    await c.land(c.held.length - 1);
    expect(await late).toMatchObject({ allowed: false, remaining: 0 });
    while (c.held.length > 0) await c.land();
  });

  it.each([true, false])(
    "three instances on one counter admit at least the limit and at most 3 × the allowance − 1 above it, in any order (shared waits: %s)",
    async (sharedWaits) => {
      const N = 3;
      let worst = 0;
      for (let seed = 1; seed <= 60; seed++) {
        const rand = prng(seed);
        const limit = [7, 60, 600][seed % 3]!;
        const bound = N * unconfirmedAllowance(limit) - 1;
        const stores = memoryStores();
        const c = heldCounter(stores.rateLimiter);
        const instances = Array.from(
          { length: N },
          () =>
            new FleetWindows(
              c.counter,
              () => {},
              () => T0,
              0,
              sharedWaits,
            ),
        );
        let admitted = 0;
        let refused = 0;
        const waiting: Promise<void>[] = [];
        const count = (d: WindowDecision) => (d.allowed ? admitted++ : refused++);
        // Far more hits than the limit, each to a random instance, with batches landing in a random order between them.
        for (let step = 0; step < limit * 3; step++) {
          if (c.held.length > 0 && rand() < 0.3) await c.land(Math.floor(rand() * c.held.length));
          const d = instances[Math.floor(rand() * N)]!.decide("tenant:t", limit, MINUTE);
          if (d instanceof Promise) waiting.push(d.then((x) => void count(x)));
          else count(d);
        }
        while (c.held.length > 0) await c.land(Math.floor(rand() * c.held.length));
        await Promise.all(waiting);
        expect(admitted + refused).toBe(limit * 3);
        expect(admitted, `seed ${seed}`).toBeGreaterThanOrEqual(limit);
        expect(admitted - limit, `seed ${seed}, limit ${limit}`).toBeLessThanOrEqual(bound);
        // Every hit admitted reached the shared counter (with own hits, a refused one too).
        const counted = await stores.rateLimiter.add("tenant:t", 0, MINUTE, T0);
        if (sharedWaits) expect(counted).toBe(admitted);
        else expect(counted).toBeGreaterThanOrEqual(admitted);
        worst = Math.max(worst, (admitted - limit) / bound);
      }
      // The interleavings reach into the bound (it is not vacuous), and never past it.
      expect(worst).toBeGreaterThan(0);
      expect(worst).toBeLessThanOrEqual(1);
    },
  );
});
