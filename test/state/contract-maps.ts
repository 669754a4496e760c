// Contracts for the keyed stores: ownership registry, expiring key-values, idempotency keys and the rate limiter.
import { describe, expect, it } from "vitest";
import { opener, sleep, type ContractBackend } from "./contract-backend.js";

export function ownershipContract(b: ContractBackend) {
  describe(`OwnershipRegistry (${b.name})`, () => {
    const open = opener(b);

    it("records who owns a resource, per kind", async () => {
      const { ownership } = await open.fresh();
      await ownership.claim("sandbox", "sb-1", "t1");
      expect(await ownership.owner("sandbox", "sb-1")).toBe("t1");
      expect(await ownership.owner("session", "sb-1")).toBeUndefined();
      expect(await ownership.owner("sandbox", "unknown")).toBeUndefined();
    });

    it("lists a tenant's resources newest first and counts the active ones", async () => {
      const { ownership } = await open.fresh();
      await ownership.claim("sandbox", "a", "t1");
      await ownership.claim("sandbox", "b", "t2");
      await ownership.claim("sandbox", "c", "t1");
      await ownership.claim("session", "s", "t1");
      expect(await ownership.list("sandbox", "t1")).toEqual(["c", "a"]);
      expect(await ownership.list("session", "t1")).toEqual(["s"]);
      expect(await ownership.list("sandbox", "nobody")).toEqual([]);
      expect(await ownership.activeCount("sandbox", "t1")).toBe(2);
      await ownership.setActive("sandbox", "a", false);
      await ownership.setActive("sandbox", "a", false);
      expect(await ownership.activeCount("sandbox", "t1")).toBe(1);
      expect(await ownership.owner("sandbox", "a")).toBe("t1");
      expect(await ownership.list("sandbox", "t1")).toEqual(["c", "a"]);
      await ownership.setActive("sandbox", "a", true);
      expect(await ownership.activeCount("sandbox", "t1")).toBe(2);
      await ownership.setActive("sandbox", "missing", true);
      expect(await ownership.activeCount("sandbox", "t2")).toBe(1);
    });

    it("ownerRecord answers the owner with whether the resource is live, in one read", async () => {
      const { ownership } = await open.fresh();
      expect(await ownership.ownerRecord("session", "s")).toBeUndefined();
      await ownership.claim("session", "s", "t1");
      expect(await ownership.ownerRecord("session", "s")).toEqual({ tenant: "t1", active: true });
      expect(await ownership.ownerRecord("sandbox", "s")).toBeUndefined();
      // Ended: the owner is kept for the retention, the record says it no longer runs.
      await ownership.setActive("session", "s", false);
      expect(await ownership.ownerRecord("session", "s")).toEqual({ tenant: "t1", active: false });
      expect(await ownership.owner("session", "s")).toBe("t1");
      // Another tenant's claim moves nothing; the owner's own claim makes it live again.
      expect(await ownership.claim("session", "s", "t2")).toBe(false);
      expect(await ownership.ownerRecord("session", "s")).toEqual({ tenant: "t1", active: false });
      await ownership.setActive("session", "s", true);
      expect(await ownership.ownerRecord("session", "s")).toEqual({ tenant: "t1", active: true });
      await ownership.setActive("session", "s", false);
      await ownership.claim("session", "s", "t1");
      expect(await ownership.ownerRecord("session", "s")).toEqual({ tenant: "t1", active: true });
    });

    it("never moves a resource another tenant owns: the first claim wins, a later one answers false", async () => {
      const { ownership } = await open.fresh();
      expect(await ownership.claim("session", "x", "t1")).toBe(true);
      expect(await ownership.claim("session", "y", "t2")).toBe(true);
      await ownership.setActive("session", "x", false);
      expect(await ownership.claim("session", "x", "t2")).toBe(false);
      expect(await ownership.owner("session", "x")).toBe("t1");
      expect(await ownership.list("session", "t1")).toEqual(["x"]);
      expect(await ownership.list("session", "t2")).toEqual(["y"]);
      expect(await ownership.activeCount("session", "t1")).toBe(0);
      expect(await ownership.activeCount("session", "t2")).toBe(1);
    });

    it("claimWithin counts the tenant's active resources of the kind in the claim: full at the limit, nothing listed", async () => {
      const { ownership } = await open.fresh();
      expect(await ownership.claimWithin("sandbox", "a", "t1", 2)).toEqual({ outcome: "claimed", active: 1 });
      expect(await ownership.claimWithin("sandbox", "b", "t1", 2)).toEqual({ outcome: "claimed", active: 2 });
      // Other kinds and tenants count apart.
      expect(await ownership.claimWithin("session", "s", "t1", 1)).toEqual({ outcome: "claimed", active: 1 });
      expect(await ownership.claimWithin("sandbox", "z", "t2", 1)).toEqual({ outcome: "claimed", active: 1 });
      // Full: not listed, not counted; the record, if any, is ended (its owner is the tenant that made it).
      expect(await ownership.claimWithin("sandbox", "c", "t1", 2)).toEqual({ outcome: "full", active: 2 });
      expect(await ownership.list("sandbox", "t1")).toEqual(["b", "a"]);
      expect(await ownership.activeCount("sandbox", "t1")).toBe(2);
      expect(await ownership.owner("sandbox", "c")).not.toBe("t2");
      // The tenant's live one again is counted already: never refused.
      expect(await ownership.claimWithin("sandbox", "a", "t1", 2)).toEqual({ outcome: "claimed", active: 2 });
      // Another tenant's: nothing moves, the count stays.
      expect(await ownership.claimWithin("sandbox", "z", "t1", 5)).toEqual({ outcome: "taken", active: 2 });
      expect(await ownership.owner("sandbox", "z")).toBe("t2");
      expect(await ownership.list("sandbox", "t1")).toEqual(["a", "b"]); // claimed again: newest
      // A slot freed (one ended) is taken again, and an ended one of the tenant's is claimed live within the limit.
      await ownership.setActive("sandbox", "b", false);
      expect(await ownership.claimWithin("sandbox", "d", "t1", 2)).toEqual({ outcome: "claimed", active: 2 });
      expect(await ownership.claimWithin("sandbox", "b", "t1", 2)).toEqual({ outcome: "full", active: 2 });
      expect(await ownership.claimWithin("sandbox", "b", "t1", 3)).toEqual({ outcome: "claimed", active: 3 });
    });

    it("claimWithin admits exactly the limit of many concurrent claims", async () => {
      const { ownership } = await open.fresh();
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => ownership.claimWithin("session", `s${i}`, "t1", 3)));
      expect(answers.filter((a) => a.outcome === "claimed")).toHaveLength(3);
      expect(answers.filter((a) => a.outcome === "full")).toHaveLength(9);
      expect(await ownership.activeCount("session", "t1")).toBe(3);
      expect(await ownership.list("session", "t1")).toHaveLength(3);
    });

    it("takes a claim again by the same tenant: newest and active again", async () => {
      const { ownership } = await open.fresh();
      await ownership.claim("session", "x", "t1");
      await ownership.claim("session", "y", "t1");
      await ownership.setActive("session", "x", false);
      expect(await ownership.claim("session", "x", "t1")).toBe(true);
      expect(await ownership.list("session", "t1")).toEqual(["x", "y"]);
      expect(await ownership.activeCount("session", "t1")).toBe(2);
    });

    it("keeps each resource's last known status with the tenant's records, newest first", async () => {
      const { ownership } = await open.fresh();
      await ownership.claim("sandbox", "a", "t1");
      await ownership.claim("sandbox", "b", "t1");
      await ownership.claim("sandbox", "c", "t2");
      await ownership.noteStatus("sandbox", "a", "active");
      await ownership.noteStatus("sandbox", "a", "closed");
      await ownership.noteStatus("sandbox", "missing", "active");
      expect(await ownership.records("sandbox", "t1")).toEqual([
        { id: "b", active: true },
        { id: "a", active: true, status: "closed" },
      ]);
      expect(await ownership.records("sandbox", "nobody")).toEqual([]);
      // Marked ended (or live again), its status changed: the last one seen is forgotten.
      await ownership.noteStatus("sandbox", "b", "active");
      await ownership.setActive("sandbox", "b", false);
      await ownership.setActive("sandbox", "a", true);
      expect(await ownership.records("sandbox", "t1")).toEqual([
        { id: "b", active: false },
        { id: "a", active: true, status: "closed" },
      ]);
      await ownership.noteStatus("sandbox", "b", "closed");
      expect((await ownership.records("sandbox", "t1"))[0]).toEqual({ id: "b", active: false, status: "closed" });
      expect(await ownership.owner("sandbox", "missing")).toBeUndefined();
    });

    it("forgets a resource that ended longer than the retention ago: owner undefined, out of the list", async () => {
      const { ownership } = await open.retaining(400);
      await ownership.claim("session", "ended", "t1");
      await ownership.claim("session", "running", "t1");
      await ownership.claim("session", "back", "t1");
      await ownership.setActive("session", "ended", false);
      await ownership.setActive("session", "back", false);
      await ownership.setActive("session", "back", true);
      // Within the retention an ended resource still has its owner.
      expect(await ownership.owner("session", "ended")).toBe("t1");
      await sleep(700);
      expect(await ownership.owner("session", "ended")).toBeUndefined();
      expect(await ownership.ownerRecord("session", "ended")).toBeUndefined();
      expect(await ownership.owner("session", "running")).toBe("t1");
      expect(await ownership.ownerRecord("session", "back")).toEqual({ tenant: "t1", active: true });
      expect(await ownership.owner("session", "back")).toBe("t1");
      expect(await ownership.list("session", "t1")).toEqual(["back", "running"]);
      expect(await ownership.activeCount("session", "t1")).toBe(2);
      // Claimed again (an id reused), it is owned anew.
      await ownership.claim("session", "ended", "t2");
      expect(await ownership.owner("session", "ended")).toBe("t2");
      expect(await ownership.list("session", "t2")).toEqual(["ended"]);
    });
  });
}

export function kvContract(b: ContractBackend) {
  describe(`KeyValueStore (${b.name})`, () => {
    const open = opener(b);

    it("stores, overwrites and deletes values", async () => {
      const { kv } = await open.fresh();
      expect(await kv.get("k")).toBeUndefined();
      await kv.set("k", "v1", 60_000);
      await kv.set("k", "v2", 60_000);
      expect(await kv.get("k")).toBe("v2");
      await kv.delete("k");
      await kv.delete("never-set");
      expect(await kv.get("k")).toBeUndefined();
    });

    it("forgets a value once its ttl has passed", async () => {
      const { kv } = await open.fresh();
      // Generous: under a loaded machine a round trip to a Durable Object can take hundreds of milliseconds.
      await kv.set("short", "x", 2000);
      await kv.set("long", "y", 60_000);
      expect(await kv.get("short")).toBe("x");
      await sleep(2300);
      expect(await kv.get("short")).toBeUndefined();
      expect(await kv.get("long")).toBe("y");
    });

    it("counts with incrBy from zero, keeping the ttl set when the counter was created", async () => {
      const { kv } = await open.fresh();
      expect(await kv.incrBy("n", 5, 2000)).toBe(5);
      expect(await kv.incrBy("n", -2, 60_000)).toBe(3);
      expect(await kv.get("n")).toBe("3");
      await sleep(2300);
      expect(await kv.get("n")).toBeUndefined();
      expect(await kv.incrBy("n", 1, 60_000)).toBe(1);
    });

    it("loses no increment under concurrency", async () => {
      const { kv } = await open.fresh();
      await Promise.all(Array.from({ length: 100 }, () => kv.incrBy("c", 1, 60_000)));
      expect(await kv.get("c")).toBe("100");
    });
  });
}

export function idempotencyContract(b: ContractBackend) {
  const response = { status: 200, headers: { "content-type": "application/json" }, body: btoa('{"ok":true}'), fingerprint: "fp-1" };
  describe(`IdempotencyStore (${b.name})`, () => {
    const open = opener(b);

    it("claims a new key once; later callers see it pending, then its stored response", async () => {
      const { idempotency } = await open.fresh();
      expect(await idempotency.begin("k1", "fp-1", 60_000)).toEqual({ state: "new" });
      expect(await idempotency.begin("k1", "fp-1", 60_000)).toEqual({ state: "pending" });
      expect(await idempotency.begin("k2", "fp-1", 60_000)).toEqual({ state: "new" });
      await idempotency.complete("k1", response, 60_000);
      expect(await idempotency.begin("k1", "fp-2", 60_000)).toEqual({ state: "done", response });
    });

    it("gives exactly one of many concurrent callers the key", async () => {
      const { idempotency } = await open.fresh();
      const r = await Promise.all(Array.from({ length: 50 }, () => idempotency.begin("race", "fp", 60_000)));
      expect(r.filter((x) => x.state === "new")).toHaveLength(1);
      expect(r.filter((x) => x.state === "pending")).toHaveLength(49);
    });

    it("lets a retry run again after abandon or once the lease lapses", async () => {
      const { idempotency } = await open.fresh();
      await idempotency.begin("a", "fp", 60_000);
      await idempotency.abandon("a");
      expect(await idempotency.begin("a", "fp", 60_000)).toEqual({ state: "new" });
      await idempotency.begin("lease", "fp", 150);
      await sleep(400);
      expect(await idempotency.begin("lease", "fp", 60_000)).toEqual({ state: "new" });
    });

    it("forgets a stored response after its ttl", async () => {
      const { idempotency } = await open.fresh();
      await idempotency.begin("d", "fp", 60_000);
      await idempotency.complete("d", response, 150);
      await sleep(400);
      expect(await idempotency.begin("d", "fp", 60_000)).toEqual({ state: "new" });
    });
  });
}

export function rateLimiterContract(b: ContractBackend) {
  describe(`RateLimiter (${b.name})`, () => {
    const open = opener(b);
    const W0 = Date.UTC(2026, 0, 1, 12, 0, 0);

    it("allows `limit` hits per fixed window, then refuses until the next window", async () => {
      const { rateLimiter } = await open.fresh();
      const hits = [];
      for (let i = 0; i < 4; i++) hits.push(await rateLimiter.hit("t1", 3, 1000, W0 + 100 + i));
      expect(hits.map((h) => [h.allowed, h.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      expect(hits[0]).toMatchObject({ limit: 3, resetAt: W0 + 1000 });
      expect(await rateLimiter.hit("t2", 3, 1000, W0 + 500)).toMatchObject({ allowed: true, remaining: 2 });
      expect(await rateLimiter.hit("t1", 3, 1000, W0 + 1000)).toEqual({ allowed: true, limit: 3, remaining: 2, resetAt: W0 + 2000 });
    });

    it("adds a batch of hits to the window `hit` counts in, and reads it with 0", async () => {
      const [one, two] = await open.pair();
      expect(await one.rateLimiter.add("batch", 5, 1000, W0 + 10)).toBe(5);
      expect(await two.rateLimiter.hit("batch", 7, 1000, W0 + 20)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await two.rateLimiter.add("batch", 0, 1000, W0 + 30)).toBe(6);
      expect(await one.rateLimiter.add("batch", 2, 1000, W0 + 999)).toBe(8);
      expect(await one.rateLimiter.add("batch", 1, 1000, W0 + 1000)).toBe(1); // the next window
    });

    it("allows exactly `limit` of many concurrent hits", async () => {
      const [one, two] = await open.pair();
      const r = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? one : two).rateLimiter.hit("burst", 10, 60_000, W0)));
      expect(r.filter((x) => x.allowed)).toHaveLength(10);
    });
  });
}
