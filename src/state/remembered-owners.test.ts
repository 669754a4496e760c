// Owners remembered per instance: answered without the store once known, forgotten when this instance ends the
// resource, reread after the memory's time, never remembered while unknown.
import { describe, expect, it } from "vitest";
import { memoryStores } from "./memory.js";
import { OWNER_MEMORY_MS, withRememberedOwners } from "./remembered-owners.js";

function counted() {
  let t = 1_000_000;
  const now = () => t;
  const inner = memoryStores(now, { endedRetentionMs: 0 });
  let reads = 0;
  const owner = inner.ownership.owner.bind(inner.ownership);
  inner.ownership.owner = (kind, id) => {
    reads++;
    return owner(kind, id);
  };
  const stores = withRememberedOwners(inner, { now, ttlMs: OWNER_MEMORY_MS });
  return { stores, reads: () => reads, advance: (ms: number) => (t += ms) };
}

describe("remembered owners", () => {
  it("answers a claimed or read owner without the store, and rereads it after a minute", async () => {
    const s = counted();
    expect(await s.stores.ownership.claim("sandbox", "a", "acme")).toBe(true);
    expect(await s.stores.ownership.owner("sandbox", "a")).toBe("acme");
    expect(s.reads()).toBe(0);
    s.advance(OWNER_MEMORY_MS);
    expect(await s.stores.ownership.owner("sandbox", "a")).toBe("acme");
    expect(s.reads()).toBe(1);
    expect(await s.stores.ownership.owner("sandbox", "a")).toBe("acme");
    expect(s.reads()).toBe(1);
  });

  it("never remembers an unknown id (it may be claimed a moment later), nor a claim lost to another tenant", async () => {
    const s = counted();
    expect(await s.stores.ownership.owner("session", "b")).toBeUndefined();
    await s.stores.ownership.claim("session", "b", "acme");
    expect(await s.stores.ownership.owner("session", "b")).toBe("acme");
    expect(await s.stores.ownership.claim("session", "b", "evil")).toBe(false);
    expect(await s.stores.ownership.owner("session", "b")).toBe("acme");
  });

  it("forgets a resource this instance ends, so a retention of 0 answers undefined at once", async () => {
    const s = counted();
    await s.stores.ownership.claim("sandbox", "c", "acme");
    await s.stores.ownership.setActive("sandbox", "c", false);
    s.advance(1);
    expect(await s.stores.ownership.owner("sandbox", "c")).toBeUndefined();
  });

  it("reads a resource's record (owner and active flag) from the store every time: another instance may end it", async () => {
    // Two instances on one store: A remembers the owner it claimed, B ends the resource.
    const shared = memoryStores();
    const a = withRememberedOwners(shared, { now: Date.now, ttlMs: OWNER_MEMORY_MS });
    const b = withRememberedOwners(shared, { now: Date.now, ttlMs: OWNER_MEMORY_MS });
    await a.ownership.claim("session", "d", "acme");
    expect(await a.ownership.ownerRecord("session", "d")).toEqual({ tenant: "acme", active: true });
    await b.ownership.setActive("session", "d", false);
    expect(await a.ownership.ownerRecord("session", "d")).toEqual({ tenant: "acme", active: false });
    expect(await a.ownership.owner("session", "d")).toBe("acme"); // the owner, remembered, is still right
    expect(await a.ownership.ownerRecord("session", "unknown")).toBeUndefined();
  });

  it("is off with a memory time of 0 (a retention of 0 days)", async () => {
    const inner = memoryStores();
    expect(withRememberedOwners(inner, { now: Date.now, ttlMs: 0 }).ownership).toBe(inner.ownership);
  });
});
