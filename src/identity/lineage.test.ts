// The credential tree's check: a derived credential names its parent key by id (or hash); it holds while the tenant
// holds that key unexpired, and is refused (401 token_revoked) once the key is gone or has expired.
import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/tenant-schema.js";
import { GatewayError } from "../errors.js";
import type { GatewayToken } from "./tokens.js";
import { holdsKey, lineageOf, parentsStand, requireParentKey } from "./lineage.js";
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

describe("the lineage a derived token inherits", () => {
  it("from a key caller, the key's id; from a token caller, the token's own parents", async () => {
    const { tenant } = await tenantWith();
    const key = generateTenantKey();
    expect(await lineageOf({ via: "key", tenant, presented: key })).toEqual({ parentKey: keyIdOf(await hashTenantKey(key)) });
    const token: GatewayToken = { tenant: "acme", kind: "mcp", scopes: [], jti: "j", exp: 0, iat: 0, parentKey: "abcd", grant: "grt_x" };
    expect(await lineageOf({ via: "token", tenant, token, presented: "eyJ" })).toEqual({ parentKey: "abcd", grant: "grt_x" });
    expect(
      await lineageOf({ via: "token", tenant, token: { ...token, parentKey: undefined, grant: undefined }, presented: "eyJ" }),
    ).toEqual({});
    expect(await lineageOf({ via: "public" })).toEqual({});
  });

  it("parents stand while the tenant is enabled and holds the key", async () => {
    const { tenant, live, gone } = await tenantWith();
    const directory = { get: (id: string) => (id === "acme" ? tenant : undefined) };
    expect(parentsStand({ tenant: "acme", parentKey: keyIdOf(live) }, directory, NOW)).toBe(true);
    expect(parentsStand({ tenant: "acme" }, directory, NOW)).toBe(true);
    expect(parentsStand({ tenant: "acme", parentKey: keyIdOf(gone) }, directory, NOW)).toBe(false);
    expect(parentsStand({ tenant: "other" }, directory, NOW)).toBe(false);
    const disabled = { get: () => ({ ...tenant, enabled: false }) };
    expect(parentsStand({ tenant: "acme", parentKey: keyIdOf(live) }, disabled, NOW)).toBe(false);
  });
});
