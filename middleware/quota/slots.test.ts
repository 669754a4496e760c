// CreationSlots: atomic reservation of creation slots against a per-tenant limit (memory backend).
import { describe, expect, it } from "vitest";
import { memoryStores } from "../../src/state/memory.js";
import { CreationSlots } from "./slots.js";

function setup(start = 1_000_000) {
  let now = start;
  const stores = memoryStores(() => now);
  return { stores, slots: new CreationSlots(stores.kv, stores.ownership, () => now), advance: (ms: number) => (now += ms) };
}

describe("CreationSlots", () => {
  it("admits exactly `limit` of many simultaneous reservations", async () => {
    const { slots } = setup();
    const results = await Promise.all(Array.from({ length: 10 }, () => slots.reserve("session", "t", 3)));
    expect(results.filter((r) => r.ok)).toHaveLength(3);
    expect(results.find((r) => !r.ok)).toMatchObject({ ok: false, limit: 3, active: 0 });
  });

  it("counts claimed resources as well as creations in flight", async () => {
    const { slots, stores } = setup();
    await stores.ownership.claim("sandbox", "a", "t");
    const first = await slots.reserve("sandbox", "t", 2);
    expect(first.ok).toBe(true);
    expect(await slots.reserve("sandbox", "t", 2)).toEqual({ ok: false, limit: 2, active: 1, pending: 1 });
  });

  it("frees the slot on release, and on stop of a claimed resource", async () => {
    const { slots, stores } = setup();
    const r = await slots.reserve("session", "t", 1);
    if (!r.ok) throw new Error("expected a slot");
    await r.release();
    await r.release(); // idempotent
    const again = await slots.reserve("session", "t", 1);
    if (!again.ok) throw new Error("expected a slot after release");
    await stores.ownership.claim("session", "s1", "t");
    await again.release();
    expect((await slots.reserve("session", "t", 1)).ok).toBe(false);
    await stores.ownership.setActive("session", "s1", false);
    expect((await slots.reserve("session", "t", 1)).ok).toBe(true);
  });

  it("still sees a creation in flight after the clock crosses into the next bucket", async () => {
    const { slots, advance } = setup(5 * 60_000 - 10);
    const r = await slots.reserve("session", "t", 1);
    expect(r.ok).toBe(true);
    advance(20);
    expect((await slots.reserve("session", "t", 1)).ok).toBe(false);
    if (r.ok) await r.release();
    expect((await slots.reserve("session", "t", 1)).ok).toBe(true);
  });

  it("waits for two state round trips: the increment beside the previous bucket's read, then the active count", async () => {
    const stores = memoryStores(() => 1_000_000);
    const events: string[] = [];
    // Each call logs when it starts and when it answers (a turn of the event loop later, as a remote store would).
    const logged = <T extends object>(name: string, target: T): T =>
      new Proxy(target, {
        get(t, prop, receiver) {
          const v = Reflect.get(t, prop, receiver);
          if (typeof v !== "function") return v;
          return async (...args: unknown[]) => {
            events.push(`start ${name}.${String(prop)}`);
            await new Promise((r) => setTimeout(r, 5));
            const out = await (v as (...a: unknown[]) => unknown).apply(t, args);
            events.push(`end ${name}.${String(prop)}`);
            return out;
          };
        },
      });
    const slots = new CreationSlots(logged("kv", stores.kv), logged("ownership", stores.ownership), () => 1_000_000);
    expect((await slots.reserve("sandbox", "t", 5)).ok).toBe(true);
    expect(events.slice(0, 2).sort()).toEqual(["start kv.get", "start kv.incrBy"]);
    expect(events.slice(2, 4).sort()).toEqual(["end kv.get", "end kv.incrBy"]);
    expect(events.slice(4)).toEqual(["start ownership.activeCount", "end ownership.activeCount"]);
  });

  it("keeps tenants and kinds apart", async () => {
    const { slots } = setup();
    expect((await slots.reserve("session", "a", 1)).ok).toBe(true);
    expect((await slots.reserve("session", "b", 1)).ok).toBe(true);
    expect((await slots.reserve("sandbox", "a", 1)).ok).toBe(true);
  });
});
