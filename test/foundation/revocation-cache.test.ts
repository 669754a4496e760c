// Token revocation checks are cached per instance while the fleet's revocation count is unchanged: a verified token
// costs no state read on the hot path, a revocation applies at once on the instance that made it and within 250 ms on
// every other one.
import { describe, expect, it } from "vitest";
import { MemoryKeyValue } from "../../src/state/memory.js";
import type { KeyValueStore } from "../../src/state/types.js";
import { TokenService } from "../../src/identity/tokens.js";

/** A key-value store that counts its reads. */
function counting(kv: KeyValueStore) {
  const c = { reads: 0 };
  const wrapped: KeyValueStore = {
    get: (k) => (c.reads++, kv.get(k)),
    set: (k, v, t) => kv.set(k, v, t),
    delete: (k) => kv.delete(k),
    incrBy: (k, by, t) => kv.incrBy(k, by, t),
    setIfAbsent: (k, v, t) => kv.setIfAbsent(k, v, t),
  };
  return { kv: wrapped, c };
}

describe("revocation checks cached per instance", () => {
  it("reads no state for a token already found valid, until the fleet's revocation count changes", async () => {
    let now = Date.parse("2026-11-23T10:00:00Z");
    const shared = new MemoryKeyValue(() => now);
    const onA = counting(shared);
    const onB = counting(shared);
    const a = new TokenService("s".repeat(40), onA.kv, () => now);
    const b = new TokenService("s".repeat(40), onB.kv, () => now);
    const one = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb1", scopes: ["runtime"], ttlSeconds: 600 });
    const two = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb2", scopes: ["runtime"], ttlSeconds: 600 });

    await b.verify(one.token);
    const before = onB.c.reads;
    for (let i = 0; i < 100; i++) {
      now += 1;
      await b.verify(one.token);
    }
    expect(onB.c.reads - before).toBe(0);
    // Past the poll interval, one read of the count (unchanged) and still nothing per token.
    now += 300;
    await b.verify(one.token);
    await b.verify(one.token);
    expect(onB.c.reads - before).toBe(1);

    // Revoked on A: refused on A at once, on B once its poll interval has passed.
    await a.revoke(one.jti, Math.floor(now / 1000) + 600);
    await expect(a.verify(one.token)).rejects.toMatchObject({ status: 401, code: "token_revoked" });
    now += 250;
    await expect(b.verify(one.token)).rejects.toMatchObject({ status: 401, code: "token_revoked" });
    expect(await b.stillValid(two.token)).toBe(true);

    // The kill switch's tenant-wide revocation reaches B's cached tokens the same way.
    await a.revokeTenant("acme");
    now += 250;
    await expect(b.verify(two.token)).rejects.toMatchObject({ status: 401, code: "token_revoked" });
  });

  it("verifyNow answers without waiting exactly when verify would read nothing, and refuses as verify does", async () => {
    let now = Date.parse("2026-11-23T10:00:00Z");
    const shared = new MemoryKeyValue(() => now);
    const a = new TokenService("s".repeat(40), shared, () => now);
    const b = new TokenService("s".repeat(40), shared, () => now);
    const one = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb1", scopes: ["runtime"], ttlSeconds: 600 });
    expect(() => b.verifyNow(undefined)).toThrow(expect.objectContaining({ code: "token_missing" }));
    expect(b.verifyNow(one.token)).toBeUndefined(); // a signature to check first
    await b.verify(one.token);
    expect(b.verifyNow(one.token)?.jti).toBe(one.jti);
    // Past the poll interval the count is read again: verify's turn.
    now += 300;
    expect(b.verifyNow(one.token)).toBeUndefined();
    await b.verify(one.token);
    expect(b.verifyNow(one.token)?.jti).toBe(one.jti);
    // Revoked elsewhere: not answered from the cache once the interval has passed, refused by verify.
    await a.revoke(one.jti, Math.floor(now / 1000) + 600);
    now += 250;
    expect(b.verifyNow(one.token)).toBeUndefined();
    await expect(b.verify(one.token)).rejects.toMatchObject({ code: "token_revoked" });
    expect(b.verifyNow(one.token)).toBeUndefined();
    // Expired: refused at once.
    const short = await a.mint({ tenant: "acme", kind: "sandbox", resource: "sb2", scopes: ["runtime"], ttlSeconds: 1 });
    await b.verify(short.token);
    now += 1_500;
    expect(() => b.verifyNow(short.token)).toThrow(expect.objectContaining({ code: "token_expired" }));
  });
});
