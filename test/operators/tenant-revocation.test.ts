// Tenant-wide token revocation (the kill switch's first step): every token of the tenant minted up to that moment
// is refused, open connections holding one are told to close, other tenants and later tokens are untouched.
import { describe, expect, it } from "vitest";
import { MemoryKeyValue } from "../../src/state/memory.js";
import { TokenService } from "../../src/tokens.js";

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
});
