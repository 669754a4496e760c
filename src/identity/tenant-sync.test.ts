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
});
