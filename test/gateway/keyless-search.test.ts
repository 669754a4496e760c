import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { search, startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";

describe("keyless search tokens with their own spend cap", () => {
  let emu: EmulatorHandle;
  let s: Awaited<ReturnType<typeof startPaidGateway>>;
  beforeAll(async () => {
    emu = await startEmulatorWithChain();
    s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
  });
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  const mint = async (cap: string) => {
    const r = await fetch(`${s.gateway.url}/_tollgate/tokens`, {
      method: "POST",
      headers: { "x-api-key": s.keys.acme, "content-type": "application/json" },
      body: JSON.stringify({ kind: "search", cap, ttlSeconds: 300 }),
    });
    expect(r.status).toBe(201);
    return r.json();
  };
  const searchWith = (token: string, query: string) =>
    fetch(`${s.gateway.url}/x402/web/search`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ query }),
    });

  it("pays with the tenant's wallet until the token's cap, then refuses with token_cap_exceeded", async () => {
    const t = await mint("0.012");
    const before = await emu.chain!.balanceOf(s.wallet.address);
    expect((await searchWith(t.token, "capped one")).status).toBe(200);
    expect((await searchWith(t.token, "capped two")).status).toBe(200);
    const third = await searchWith(t.token, "capped three");
    expect(third.status).toBe(402);
    expect(third.headers.get("payment-required")).toBeNull();
    expect(await third.json()).toMatchObject({ code: "token_cap_exceeded", limit: "0.012", spent: "0.01", price: "0.005" });
    expect(before - (await emu.chain!.balanceOf(s.wallet.address))).toBe(10_000n);
    // A cached answer costs nothing, so it is still served.
    const hit = await searchWith(t.token, "capped one");
    expect(hit.status).toBe(200);
    expect(hit.headers.get("x-tollgate-cache")).toBe("hit");
    // The tenant's own key is not bound by the token's cap.
    expect((await search(s.gateway.url, s.keys.acme, { query: "capped three" })).status).toBe(200);
    // Spending through the token is the tenant's spending.
    const usage = await (await fetch(`${s.gateway.url}/_tollgate/usage`, { headers: { "x-api-key": s.keys.acme } })).json();
    expect(usage.daily.spent).toBe("0.015");
  });

  it("holds the cap under concurrency: 10 concurrent searches with a cap for 3 → 3 payments", async () => {
    const t = await mint("0.015");
    const before = await emu.chain!.balanceOf(s.wallet.address);
    const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => searchWith(t.token, `concurrent capped ${i}`)));
    expect(rs.filter((r) => r.status === 200)).toHaveLength(3);
    expect(rs.filter((r) => r.status === 402)).toHaveLength(7);
    expect(before - (await emu.chain!.balanceOf(s.wallet.address))).toBe(15_000n);
  });

  it("is good for search only, and stops at once when revoked", async () => {
    const t = await mint("0.05");
    expect((await fetch(`${s.gateway.url}/api/sandboxes`, { headers: { authorization: `Bearer ${t.token}` } })).status).toBe(401);
    expect((await fetch(`${s.gateway.url}/_tollgate/usage`, { headers: { authorization: `Bearer ${t.token}` } })).status).toBe(401);
    await fetch(`${s.gateway.url}/_tollgate/tokens/${t.jti}`, { method: "DELETE", headers: { "x-api-key": s.keys.acme } });
    const r = await searchWith(t.token, "after revoke");
    expect(r.status).toBe(401);
    expect((await r.json()).code).toBe("token_revoked");
  });
});
