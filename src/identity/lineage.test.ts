// The credential tree's check: a derived credential names its parent key by id (or hash); it holds while the tenant
// holds that key unexpired, and is refused (401 token_revoked) once the key is gone or has expired.
import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/tenant-schema.js";
import { GatewayError } from "../errors.js";
import { holdsKey, requireParentKey } from "./lineage.js";
import { generateTenantKey, hashTenantKey, keyIdOf } from "./tenants.js";

const NOW = Date.parse("2029-06-01T00:00:00Z");

async function tenantWith() {
  const live = await hashTenantKey(generateTenantKey());
  const ending = await hashTenantKey(generateTenantKey());
  const tenant = tenantSchema.parse({
    id: "acme",
    scopes: ["search"],
    keys: [{ hash: live }, { hash: ending, expiresAt: "2030-01-01T00:00:00Z" }],
  });
  return { tenant, live, ending, gone: await hashTenantKey(generateTenantKey()) };
}

describe("the credential tree's parent check", () => {
  it("holds while the tenant holds the key (by id or hash) unexpired", async () => {
    const { tenant, live, ending, gone } = await tenantWith();
    expect(holdsKey(tenant, keyIdOf(live), NOW)).toBe(true);
    expect(holdsKey(tenant, live, NOW)).toBe(true);
    expect(holdsKey(tenant, keyIdOf(ending), NOW)).toBe(true);
    expect(holdsKey(tenant, keyIdOf(ending), Date.parse("2030-01-01T00:00:01Z"))).toBe(false);
    expect(holdsKey(tenant, keyIdOf(gone), NOW)).toBe(false);
    expect(holdsKey(undefined, keyIdOf(live), NOW)).toBe(false);
  });

  it("refuses a token whose parent key is gone as revoked; a token with no parent key is not its business", async () => {
    const { tenant, live, gone } = await tenantWith();
    expect(() => requireParentKey({ parentKey: keyIdOf(live) }, tenant, NOW)).not.toThrow();
    expect(() => requireParentKey({}, tenant, NOW)).not.toThrow();
    let err: unknown;
    try {
      requireParentKey({ parentKey: keyIdOf(gone) }, tenant, NOW);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 401, code: "token_revoked" });
  });
});
