// The directory's key lookup: `authenticateNow` answers without waiting exactly when `authenticate` would not have to
// wait, and otherwise says so (undefined); its refusals are authenticate's.
import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/tenant-schema.js";
import { generateTenantKey, hashTenantKey, TenantDirectory } from "./tenants.js";

async function directoryWith(now: () => number) {
  const key = generateTenantKey();
  const expiring = generateTenantKey();
  const off = generateTenantKey();
  const tenants = [
    tenantSchema.parse({
      id: "acme",
      scopes: ["search"],
      keys: [{ hash: await hashTenantKey(key) }, { hash: await hashTenantKey(expiring), expiresAt: "2030-01-01T00:00:00Z" }],
    }),
    tenantSchema.parse({ id: "gone", scopes: ["search"], enabled: false, keys: [{ hash: await hashTenantKey(off) }] }),
  ];
  return { directory: new TenantDirectory(tenants, now), key, expiring, off };
}

describe("TenantDirectory.authenticateNow", () => {
  it("waits for nothing once a key has been seen, and says it must wait before (a key to hash)", async () => {
    const { directory, key } = await directoryWith(Date.now);
    expect(directory.authenticateNow(key)).toBeUndefined();
    expect((await directory.authenticate(key)).id).toBe("acme");
    expect(directory.authenticateNow(key)?.id).toBe("acme");
  });

  it("refuses as authenticate does: no key, an expired key, a disabled tenant", async () => {
    let t = Date.parse("2029-12-31T23:59:59Z");
    const { directory, expiring, off } = await directoryWith(() => t);
    expect(() => directory.authenticateNow(undefined)).toThrow(expect.objectContaining({ status: 401 }));
    expect((await directory.authenticate(expiring)).id).toBe("acme");
    t += 2_000;
    expect(() => directory.authenticateNow(expiring)).toThrow(expect.objectContaining({ code: "api_key_expired" }));
    await expect(directory.authenticate(expiring)).rejects.toMatchObject({ code: "api_key_expired" });
    await expect(directory.authenticate(off)).rejects.toMatchObject({ code: "tenant_disabled" });
    expect(() => directory.authenticateNow(off)).toThrow(expect.objectContaining({ code: "tenant_disabled" }));
  });

  it("hands over to authenticate while the snapshot is stale, so a revoked key never answers from it", async () => {
    const { directory, key } = await directoryWith(Date.now);
    await directory.authenticate(key);
    let stale = true;
    let refreshed = 0;
    let pending: Promise<void> | undefined;
    // As TenantSync.fresh: one check in flight at a time, nothing to wait for once recent.
    directory.setRefresher(() => {
      if (!stale) return undefined;
      pending ??= Promise.resolve().then(() => {
        refreshed++;
        stale = false;
        directory.replace([]); // the store revoked every key
      });
      return pending;
    });
    expect(directory.authenticateNow(key)).toBeUndefined();
    await expect(directory.authenticate(key)).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });
    expect(refreshed).toBe(1);
    expect(() => directory.authenticateNow(key)).toThrow(expect.objectContaining({ code: "invalid_api_key" }));
  });
});
