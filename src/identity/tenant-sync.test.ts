import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/tenant-schema.js";
import { generateTenantKey, hashTenantKey, TenantDirectory } from "./tenants.js";
import { Logger, Redactor } from "../log.js";
import { MemoryTenantStore } from "../state/memory-operators.js";
import type { TenantStore } from "../state/types.js";
import { TenantSync } from "./tenant-sync.js";

/** A store that can "restart" empty, the way a Redis without persistence comes back. */
function restartableStore(): TenantStore & { restart(): void } {
  let inner = new MemoryTenantStore();
  return {
    restart: () => {
      inner = new MemoryTenantStore();
    },
    version: () => inner.version(),
    list: () => inner.list(),
    get: (id) => inner.get(id),
    put: (r) => inner.put(r),
    create: (r) => inner.create(r),
    seed: (r) => inner.seed(r),
  };
}

describe("TenantSync", () => {
  it("seeds the config tenants again when the store comes back without its records, so their keys keep working", async () => {
    const key = generateTenantKey();
    const tenant = tenantSchema.parse({ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(key) }] });
    let t = 0;
    const now = () => t;
    const directory = new TenantDirectory([tenant], now);
    const store = restartableStore();
    const lines: string[] = [];
    const sync = new TenantSync(store, directory, [tenant], new Logger((l) => lines.push(l), "info", new Redactor(), now), now);
    directory.setRefresher(() => sync.fresh());
    await sync.refresh();
    await store.put({ tenant: { ...tenant, id: "made-by-api" }, source: "api", updatedAt: 1 });
    t += 1_000;
    await sync.refresh();
    expect((await directory.authenticate(key)).id).toBe("ops");
    expect(directory.get("made-by-api")).toBeDefined();

    store.restart();
    t += 1_000;
    await sync.refresh();
    expect((await directory.authenticate(key)).id).toBe("ops");
    expect(lines.some((l) => l.includes("tenant store lost its records"))).toBe(true);
    expect((await store.list()).map((r) => r.tenant.id)).toEqual(["ops"]);
  });

  it.each([true, false])(
    "a lookup on a stale snapshot waits for a check: the one in flight, or its own (shared waits: %s)",
    async (sharedWaits) => {
      const key = generateTenantKey();
      const tenant = tenantSchema.parse({ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(key) }] });
      let t = 10_000; // past pollMs: a poll starts a check
      const now = () => t;
      const directory = new TenantDirectory([tenant], now);
      const inner = new MemoryTenantStore();
      // Every version read held until the test lets it through, so a check stays in flight.
      const held: Array<() => void> = [];
      let reads = 0;
      const store: TenantStore = {
        version: () => {
          reads++;
          return new Promise((resolve) => held.push(() => void inner.version().then(resolve)));
        },
        list: () => inner.list(),
        get: (id) => inner.get(id),
        put: (r) => inner.put(r),
        create: (r) => inner.create(r),
        seed: (r) => inner.seed(r),
      };
      const sync = new TenantSync(store, directory, [tenant], new Logger(() => {}, "info", new Redactor(), now), now, { sharedWaits });
      const settle = async () => {
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      };
      // A check started beside a request (poll), still waiting on its state call.
      const polled = sync.poll()!;
      await settle();
      expect(reads).toBe(1);
      await inner.put({ tenant: { ...tenant, id: "made-by-api" }, source: "api", updatedAt: 1 });
      t += 1_000;
      // A lookup now: with shared waits it waits for that check; without, it runs its own (a second version read).
      const fresh = sync.fresh()!;
      await settle();
      expect(reads).toBe(sharedWaits ? 1 : 2);
      if (!sharedWaits) {
        held.pop()!(); // its own answers first, the polled check still in flight
        await fresh;
        expect(directory.get("made-by-api")).toBeDefined();
      }
      while (held.length) held.shift()!();
      await Promise.all([polled, fresh]);
      expect(directory.get("made-by-api")).toBeDefined();
      expect((await directory.authenticate(key)).id).toBe("ops");
    },
  );
});
