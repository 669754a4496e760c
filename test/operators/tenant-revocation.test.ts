// Tenant-wide token revocation (the kill switch's first step): every token of the tenant minted up to that moment
// is refused, open connections holding one are told to close, other tenants and later tokens are untouched.
import { describe, expect, it } from "vitest";
import { MemoryKeyValue } from "../../src/state/memory.js";
import { TokenService } from "../../src/identity/tokens.js";

describe("TokenService.revokeTenant", () => {
  it("revokes every token the tenant holds, on every instance sharing the state, and nothing else", async () => {
    let now = Date.parse("2026-11-23T10:00:00Z");
    const kv = new MemoryKeyValue(() => now);
    const a = new TokenService("s".repeat(40), kv, () => now);
    const b = new TokenService("s".repeat(40), kv, () => now); // another instance
    const acme = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb1", scopes: ["terminal"], ttlSeconds: 600 });
    const acmeKeyless = await a.mint({ tenant: "acme", kind: "search", scopes: ["search"], cap: 1000n, ttlSeconds: 600, keyless: true });
    const globex = await a.mint({ tenant: "globex", kind: "sandbox", resource: "sb2", scopes: ["terminal"], ttlSeconds: 600 });
    expect(await b.stillValid(acme.token)).toBe(true);

    now += 1000;
    await a.revokeTenant("acme");
    for (const t of [acme.token, acmeKeyless.token]) {
      await expect(b.verify(t)).rejects.toMatchObject({ status: 401, code: "token_revoked" });
      expect(await b.stillValid(t)).toBe(false);
    }
    expect(await b.stillValid(globex.token)).toBe(true);

    // A token minted after the cut-off (the tenant re-enabled, a new sandbox) works.
    now += 1000;
    const later = await b.mint({ tenant: "acme", kind: "sandbox", resource: "sb3", scopes: ["terminal"], ttlSeconds: 600 });
    expect((await a.verify(later.token)).resource).toBe("sb3");
    // Past its expiry a revoked token handed out with a resource stays refused (open sockets close).
    now += 700_000;
    expect(await b.stillValid(acme.token)).toBe(false);
  });
  it("trusts a token found not revoked while the fleet's revocation count is unchanged (read at most every 250 ms); the revoking instance and open sockets' checks see a revocation at once", async () => {
    let now = Date.parse("2026-11-24T10:00:00Z");
    const kv = new MemoryKeyValue(() => now);
    const a = new TokenService("s".repeat(40), kv, () => now);
    const b = new TokenService("s".repeat(40), kv, () => now); // another instance
    const one = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb1", scopes: ["runtime"], ttlSeconds: 600 });
    const two = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb2", scopes: ["runtime"], ttlSeconds: 600 });
    await b.verify(one.token);
    await b.verify(two.token);

    const exp = (await a.inspect(one.token))!.exp;
    await a.revoke(one.jti, exp);
    await expect(a.verify(one.token)).rejects.toMatchObject({ code: "token_revoked" }); // at once where it was made
    now += 100;
    expect((await b.verify(one.token)).jti).toBe(one.jti); // the other instance read the count 100 ms ago
    now += 200;
    await expect(b.verify(one.token)).rejects.toMatchObject({ code: "token_revoked" }); // and rereads it within 250 ms

    await b.verify(two.token);
    await a.revokeTenant("acme");
    expect(await b.stillValid(two.token)).toBe(false); // an open socket's check reads the store itself
    now += 300;
    await expect(b.verify(two.token)).rejects.toMatchObject({ code: "token_revoked" }); // requests within 250 ms
  });
});
