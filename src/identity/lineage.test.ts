// The credential tree's check: a derived credential names its parent key by id (or hash); it holds while the tenant
// holds that key unexpired, and is refused (401 token_revoked) once the key is gone or has expired.
import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/tenant-schema.js";
import { GatewayError } from "../errors.js";
import { MemoryKeyValue } from "../state/memory.js";
import { TokenService, type GatewayToken } from "./tokens.js";
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
    expect(await lineageOf({ via: "token", tenant, token, presented: "eyJ" })).toEqual({
      parentKey: "abcd",
      grant: "grt_x",
      parentTokens: ["j"],
      notAfter: 0,
    });
    // The token itself is a parent, after its own: the child dies with any of them, and expires with the caller.
    const child = { ...token, jti: "k", exp: 900, parentKey: undefined, grant: undefined, parentTokens: ["j"] };
    expect(await lineageOf({ via: "token", tenant, token: child, presented: "eyJ" })).toEqual({ parentTokens: ["j", "k"], notAfter: 900 });
    // No deeper than four gateway tokens.
    const deep = { ...child, parentTokens: ["a", "b", "c", "d"] };
    await expect(lineageOf({ via: "token", tenant, token: deep, presented: "eyJ" })).rejects.toMatchObject({
      status: 403,
      code: "token_depth",
    });
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

describe("a token minted for a gateway token", () => {
  it("never outlives it, and is refused once it (or any token above it) is revoked, fleet-wide", async () => {
    const { tenant } = await tenantWith();
    let now = NOW;
    const shared = new MemoryKeyValue(() => now);
    const a = new TokenService("s".repeat(40), shared, () => now);
    const b = new TokenService("s".repeat(40), shared, () => now);
    const capped = await a.mint({ tenant: "acme", kind: "mcp", scopes: ["sandboxes"], cap: 1n, keyless: true, ttlSeconds: 60 });
    const parent = await a.verify(capped.token);
    const lineage = await lineageOf({ via: "token", tenant, token: parent, presented: capped.token });
    const runtime = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb", scopes: ["runtime"], ttlSeconds: 600, ...lineage });
    // Capped at the parent's expiry, not its own TTL.
    expect(runtime.expiresAt).toBe(capped.expiresAt);
    const read = await b.verify(runtime.token);
    expect(read.parentTokens).toEqual([capped.jti]);
    const grandchild = await a.mint({
      tenant: "acme",
      kind: "sandbox",
      resource: "sb",
      scopes: ["ports"],
      ttlSeconds: 600,
      ...(await lineageOf({ via: "token", tenant, token: read, presented: runtime.token })),
    });
    expect((await b.verify(grandchild.token)).parentTokens).toEqual([capped.jti, runtime.jti]);

    await a.revoke(parent.jti, parent.exp);
    // At once here; on the other instance within its revocation poll (250 ms).
    await expect(a.verify(runtime.token)).rejects.toMatchObject({ status: 401, code: "token_revoked" });
    now += 300;
    await expect(b.verify(runtime.token)).rejects.toMatchObject({ status: 401, code: "token_revoked" });
    await expect(b.verify(grandchild.token)).rejects.toMatchObject({ status: 401, code: "token_revoked" });
    expect(await b.stillValid(runtime.token)).toBe(false);
    // Past the parent's expiry the child has expired too.
    const other = await a.mint({ tenant: "acme", kind: "mcp", scopes: ["sandboxes"], cap: 1n, keyless: true, ttlSeconds: 60 });
    const child = await a.mint({
      tenant: "acme",
      kind: "sandbox",
      resource: "sb",
      scopes: ["runtime"],
      ttlSeconds: 600,
      ...(await lineageOf({ via: "token", tenant, token: await a.verify(other.token), presented: other.token })),
    });
    now += 61_000;
    await expect(a.verify(child.token)).rejects.toMatchObject({ status: 401, code: "token_expired" });
  });

  it("an open socket may outlive its own token's expiry, never its parent's (`pe`)", async () => {
    const { tenant } = await tenantWith();
    let now = NOW;
    const tokens = new TokenService("s".repeat(40), new MemoryKeyValue(() => now), () => now);
    // Read with a key: a socket may outlive the token (the SDK cannot refresh an open socket); the key is its parent.
    const byKey = await tokens.mint({ tenant: "acme", kind: "session", resource: "s1", scopes: ["cdp"], ttlSeconds: 60 });
    // Read with a capped token living 30 s: the child's exp is the parent's, and so is its `pe`.
    const capped = await tokens.mint({ tenant: "acme", kind: "mcp", scopes: ["sessions"], cap: 1n, keyless: true, ttlSeconds: 30 });
    const lineage = await lineageOf({ via: "token", tenant, token: await tokens.verify(capped.token), presented: capped.token });
    const child = await tokens.mint({ tenant: "acme", kind: "session", resource: "s1", scopes: ["cdp"], ttlSeconds: 600, ...lineage });
    const read = await tokens.verify(child.token);
    expect(read.parentsExpire).toBe(Date.parse(capped.expiresAt) / 1000);
    expect(await tokens.stillValid(child.token)).toBe(true);
    now += 31_000;
    // Past the parent's expiry: its socket closes; the key's token's socket goes on until its own parents end.
    expect(await tokens.stillValid(child.token)).toBe(false);
    now += 60_000;
    expect(await tokens.stillValid(byKey.token)).toBe(true);
  });
});
