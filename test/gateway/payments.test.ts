import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { randomBytes } from "node:crypto";
import { search, startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";

const SEARCH_PRICE = 5000n; // $0.005, the emulator's default

describe("the gateway pays x402 for its tenants (emulator + local chain + library facilitator)", () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulatorWithChain();
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("pays a search: the wallet's on-chain balance falls by exactly the ledger's committed total, the payee gains it", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const chain = emu.chain!;
      const before = await chain.balanceOf(s.wallet.address);
      const payeeBefore = await chain.balanceOf(chain.payee);
      const r = await search(s.gateway.url, s.keys.acme, { query: "edge proxy caching" });
      expect(r.status).toBe(200);
      const body = await r.json();
      expect(body.status).toBe("completed");
      expect(body.data.results.length).toBeGreaterThan(0);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
      expect(r.headers.get("x-tollgate-cache")).toBe("miss");
      expect(r.headers.get("x-tollgate-budget-remaining")).toBe("0.995");
      expect(r.headers.get("payment-response")).toBeNull();

      const ledger = await (await fetch(`${s.gateway.url}/_tollgate/ledger`, { headers: { "x-api-key": s.keys.acme } })).json();
      const committed = ledger.entries.filter((e: any) => e.state === "committed");
      expect(committed).toHaveLength(1);
      const e = committed[0];
      expect(e).toMatchObject({
        tenant: "acme",
        route: "x402.web.search", // the route row's name, as the request log, metrics and usage export spell it
        amount: "5000",
        network: chain.network,
        payee: chain.payee,
        payer: s.wallet.address,
      });
      expect(e.nonce).toMatch(/^0x[0-9a-f]{64}$/);
      expect(e.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      const total = committed.reduce((a: bigint, x: any) => a + BigInt(x.amount), 0n);
      expect(before - (await chain.balanceOf(s.wallet.address))).toBe(total);
      expect((await chain.balanceOf(chain.payee)) - payeeBefore).toBe(total);

      const usage = await (await fetch(`${s.gateway.url}/_tollgate/usage`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(usage.daily).toMatchObject({ limit: "1.00", spent: "0.005", remaining: "0.995" });
      // One name for the route wherever it is shown: the ledger's entry and the request log's line agree.
      const log = await (await fetch(`${s.gateway.url}/_tollgate/requests`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(log.requests.map((q: { route: string }) => q.route)).toContain(e.route);
    } finally {
      await s.close();
    }
  });

  it("100 concurrent distinct searches with budget for 10 → exactly 10 payments, 90 budget_exceeded, on-chain spend = 10 prices", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "0.05" } }]);
    try {
      const chain = emu.chain!;
      const before = await chain.balanceOf(s.wallet.address);
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => search(s.gateway.url, s.keys.acme, { query: `distinct query number ${i}` })),
      );
      const statuses = results.map((r) => r.status);
      const odd = results.filter((r) => r.status !== 200 && r.status !== 402);
      if (odd.length) console.log("odd", odd[0].status, await odd[0].text());
      expect(statuses.filter((x) => x === 200)).toHaveLength(10);
      const refused = results.filter((r) => r.status === 402);
      expect(refused).toHaveLength(90);
      for (const r of refused) {
        expect(r.headers.get("payment-required")).toBeNull();
        const b = await r.json();
        expect(b).toMatchObject({ code: "budget_exceeded", window: "daily", limit: "0.05" });
        expect(b.resetAt).toMatch(/T00:00:00.000Z$/);
      }
      expect(before - (await chain.balanceOf(s.wallet.address))).toBe(10n * SEARCH_PRICE);
      const ledger = await (await fetch(`${s.gateway.url}/_tollgate/ledger?limit=1000`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(ledger.entries.filter((e: any) => e.state === "committed")).toHaveLength(10);
      expect(ledger.entries).toHaveLength(10);
    } finally {
      await s.close();
    }
  }, 120_000);

  it("100 concurrent identical searches → one payment, 100 answers", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const chain = emu.chain!;
      const before = await chain.balanceOf(s.wallet.address);
      const results = await Promise.all(
        Array.from({ length: 100 }, () => search(s.gateway.url, s.keys.acme, { query: "identical concurrent query" })),
      );
      expect(results.every((r) => r.status === 200)).toBe(true);
      const how = results.map((r) => r.headers.get("x-tollgate-cache"));
      expect(how.filter((h) => h === "miss")).toHaveLength(1);
      expect(how.every((h) => h === "miss" || h === "coalesced" || h === "hit")).toBe(true);
      const bodies = await Promise.all(results.map((r) => r.text()));
      expect(new Set(bodies).size).toBe(1);
      expect(before - (await chain.balanceOf(s.wallet.address))).toBe(SEARCH_PRICE);
    } finally {
      await s.close();
    }
  }, 120_000);

  it("a cache hit costs nothing and signs nothing; maxAgeSeconds bounds the age; no-cache bypasses", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const chain = emu.chain!;
      const q = { query: "cache behaviour check" };
      const first = await search(s.gateway.url, s.keys.acme, q);
      expect(first.headers.get("x-tollgate-cache")).toBe("miss");
      const after1 = await chain.balanceOf(s.wallet.address);

      const hit = await search(s.gateway.url, s.keys.acme, { ...q });
      expect(hit.headers.get("x-tollgate-cache")).toBe("hit");
      expect(hit.headers.get("x-tollgate-paid")).toBe("0.00");
      expect(await chain.balanceOf(s.wallet.address)).toBe(after1);

      // The same body with keys in another order is the same request.
      const reordered = await fetch(`${s.gateway.url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": s.keys.acme, "content-type": "application/json" },
        body: '{"page":1,"query":"cache behaviour check"}'.replace('"page":1,', ""),
      });
      expect(reordered.headers.get("x-tollgate-cache")).toBe("hit");

      await new Promise((r) => setTimeout(r, 1100));
      const fresh = await search(s.gateway.url, s.keys.acme, { ...q, maxAgeSeconds: 1 });
      expect(fresh.headers.get("x-tollgate-cache")).toBe("miss");
      expect(fresh.headers.get("x-tollgate-paid")).toBe("0.005");
      const stillOk = await search(s.gateway.url, s.keys.acme, { ...q, maxAgeSeconds: 60 });
      expect(stillOk.headers.get("x-tollgate-cache")).toBe("hit");

      const bypass = await search(s.gateway.url, s.keys.acme, q, { "cache-control": "no-cache" });
      expect(bypass.headers.get("x-tollgate-cache")).toBe("bypass");
      expect(bypass.headers.get("x-tollgate-paid")).toBe("0.005");
      expect(after1 - (await chain.balanceOf(s.wallet.address))).toBe(2n * SEARCH_PRICE);
      const ledger = await (await fetch(`${s.gateway.url}/_tollgate/ledger`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(ledger.entries).toHaveLength(3);
    } finally {
      await s.close();
    }
  });

  it("keeps tenant-scoped caches apart and shares a shared-scope cache", async () => {
    const s = await startPaidGateway(emu, [{ id: "a" }, { id: "b" }]);
    try {
      await search(s.gateway.url, s.keys.a, { query: "scoped cache" });
      const other = await search(s.gateway.url, s.keys.b, { query: "scoped cache" });
      expect(other.headers.get("x-tollgate-cache")).toBe("miss");
    } finally {
      await s.close();
    }
    const shared = await startPaidGateway(emu, [{ id: "a" }, { id: "b" }], { cache: { scope: "shared" } });
    try {
      await search(shared.gateway.url, shared.keys.a, { query: "shared cache" });
      const other = await search(shared.gateway.url, shared.keys.b, { query: "shared cache" });
      expect(other.headers.get("x-tollgate-cache")).toBe("hit");
      expect(other.headers.get("x-tollgate-paid")).toBe("0.00");
    } finally {
      await shared.close();
    }
  });

  it("does not sign when the upstream's price is above policy, and says the price and the limit", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme", payment: { maxPerRequest: "0.007" } }]);
    try {
      const chain = emu.chain!;
      const before = await chain.balanceOf(s.wallet.address);
      const r = await search(s.gateway.url, s.keys.acme, { query: "priced search", location: { country: "US" } });
      expect(r.status).toBe(402);
      expect(r.headers.get("payment-required")).toBeNull();
      const b = await r.json();
      expect(b).toMatchObject({ code: "price_above_policy", price: "0.01", limit: "0.007" });
      expect(b.message).toContain("$0.01");
      expect(b.message).toContain("$0.007");
      expect(await chain.balanceOf(s.wallet.address)).toBe(before);
      const ledger = await (await fetch(`${s.gateway.url}/_tollgate/ledger`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(ledger.entries).toHaveLength(0);
    } finally {
      await s.close();
    }
  });

  it("reserves ahead the option last paid: the same is signed on that hold, another releases it and reserves afresh; ledger == chain", async () => {
    // docs/paid-round-trips.md: beside the unpaid first call, the option last paid on the route is reserved with its
    // authorization; the emulator asks $0.01 for a search with a location, $0.005 without.
    const metricsToken = randomBytes(16).toString("hex");
    const s = await startPaidGateway(
      emu,
      [
        { id: "acme", budget: { daily: "1.00" }, payment: { maxPerRequest: "0.05" } },
        { id: "beta", budget: { daily: "1.00" } },
      ],
      { secrets: { metricsToken } },
    );
    const ahead = async () => {
      const text = await (
        await fetch(`${s.gateway.url}/_tollgate/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
      ).text();
      const of = (outcome: string) =>
        Number(new RegExp(`^tollgate_payments_reserved_ahead_total\\{outcome="${outcome}"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
      return { taken: of("taken"), released: of("released"), none: of("none") };
    };
    try {
      const chain = emu.chain!;
      const before = await chain.balanceOf(s.wallet.address);
      const paid: string[] = [];
      for (const body of [
        { query: "ahead one" }, // nothing remembered: reserved after the 402
        { query: "ahead two", location: { country: "US" } }, // $0.005 reserved ahead, $0.01 asked: released, afresh
        { query: "ahead three" }, // $0.01 ahead, $0.005 asked: released, afresh
        { query: "ahead four" }, // $0.005 ahead and asked: signed on the hold reserved ahead
        { query: "ahead five" },
      ]) {
        const r = await search(s.gateway.url, s.keys.acme, body);
        expect(r.status, await r.clone().text()).toBe(200);
        paid.push(r.headers.get("x-tollgate-paid")!);
      }
      expect(paid).toEqual(["0.005", "0.01", "0.005", "0.005", "0.005"]);
      expect(await ahead()).toEqual({ taken: 2, released: 2, none: 1 });
      const ledgerOf = async () =>
        (await (await fetch(`${s.gateway.url}/_tollgate/ledger`, { headers: { "x-api-key": s.keys.acme } })).json()).entries as any[];
      // Commits and releases are recorded behind the answers.
      let entries = await ledgerOf();
      for (let i = 0; i < 100 && entries.some((e) => e.state === "reserved"); i++) {
        await new Promise((r) => setTimeout(r, 50));
        entries = await ledgerOf();
      }
      const committed = entries.filter((e) => e.state === "committed");
      const released = entries.filter((e) => e.state === "released");
      expect(committed).toHaveLength(5);
      expect(released.map((e) => e.amount).sort()).toEqual(["10000", "5000"]);
      expect(entries).toHaveLength(7);
      // Every committed hold carried its authorization from the reservation on; each nonce signed once.
      expect(new Set(committed.map((e) => e.nonce)).size).toBe(5);
      const total = committed.reduce((a, e) => a + BigInt(e.amount), 0n);
      expect(total).toBe(30_000n);
      expect(before - (await chain.balanceOf(s.wallet.address))).toBe(total);
      const usage = await (await fetch(`${s.gateway.url}/_tollgate/usage`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(usage.daily).toMatchObject({ spent: "0.03" });
      // Another tenant's first miss on this instance reserves ahead too: the route's price is the same for every caller.
      const beta = await search(s.gateway.url, s.keys.beta!, { query: "ahead six" });
      expect(beta.status, await beta.clone().text()).toBe(200);
      expect(beta.headers.get("x-tollgate-paid")).toBe("0.005");
      expect(await ahead()).toEqual({ taken: 3, released: 2, none: 1 });
    } finally {
      await s.close();
    }
  });

  it("pays at most once per Idempotency-Key: a retry returns the stored answer, concurrent duplicates wait for the first", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme" }]);
    try {
      const chain = emu.chain!;
      const before = await chain.balanceOf(s.wallet.address);
      const h = { "idempotency-key": "order-42", "cache-control": "no-cache" };
      const [a, b, c] = await Promise.all([1, 2, 3].map(() => search(s.gateway.url, s.keys.acme, { query: "idempotent search" }, h)));
      const later = await search(s.gateway.url, s.keys.acme, { query: "idempotent search" }, h);
      const texts = await Promise.all([a, b, c, later].map((r) => r.text()));
      expect(new Set(texts).size).toBe(1);
      expect(later.headers.get("x-tollgate-cache")).toBe("idempotent-replay");
      expect(later.headers.get("x-tollgate-paid")).toBe("0.00");
      expect(before - (await chain.balanceOf(s.wallet.address))).toBe(SEARCH_PRICE);
      const reused = await search(s.gateway.url, s.keys.acme, { query: "another body" }, h);
      expect(reused.status).toBe(422);
      expect((await reused.json()).code).toBe("idempotency_key_reused");
    } finally {
      await s.close();
    }
  });

  it("rejects a malformed body before paying anything", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme" }]);
    try {
      const before = await emu.chain!.balanceOf(s.wallet.address);
      const bad = await fetch(`${s.gateway.url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": s.keys.acme },
        body: "{not json",
      });
      expect(bad.status).toBe(400);
      expect((await bad.json()).code).toBe("invalid_json");
      const missing = await search(s.gateway.url, s.keys.acme, { page: 1 });
      expect(missing.status).toBe(400);
      expect(await emu.chain!.balanceOf(s.wallet.address)).toBe(before);
    } finally {
      await s.close();
    }
  });

  it("pays a v1 upstream (X-PAYMENT) too", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme" }]);
    try {
      const before = await emu.chain!.balanceOf(s.wallet.address);
      const r = await search(s.gateway.url, s.keys.acme, { query: "version one upstream" }, { "x402-version": "1" });
      expect(r.status).toBe(200);
      expect(before - (await emu.chain!.balanceOf(s.wallet.address))).toBe(SEARCH_PRICE);
    } finally {
      await s.close();
    }
  });

  it("lets a tenant configured to pay for itself pass its own PAYMENT-SIGNATURE through, charging nothing to it", async () => {
    const s = await startPaidGateway(emu, [{ id: "selfpay", paysForItself: true, budget: { daily: "0.001" } }]);
    try {
      const chain = emu.chain!;
      const own = await chain.createFundedWallet(1_000_000n);
      const client = new x402Client().setSpendControls({
        allowedAssets: [{ network: chain.network, asset: chain.token.address, maxAmountPerPayment: "100000" }],
      });
      registerExactEvmScheme(client, { signer: privateKeyToAccount(own.privateKey) });
      const pay = wrapFetchWithPayment(fetch, client);
      const gwBefore = await chain.balanceOf(s.wallet.address);
      const unpaid = await search(s.gateway.url, s.keys.selfpay, { query: "self paid" });
      expect(unpaid.status).toBe(402);
      expect(unpaid.headers.get("payment-required")).toBeTruthy();
      const r = await pay(`${s.gateway.url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": s.keys.selfpay, "content-type": "application/json" },
        body: JSON.stringify({ query: "self paid" }),
      });
      expect(r.status).toBe(200);
      expect(r.headers.get("payment-response")).toBeTruthy();
      expect(1_000_000n - (await chain.balanceOf(own.address))).toBe(SEARCH_PRICE);
      expect(await chain.balanceOf(s.wallet.address)).toBe(gwBefore);
      const ledger = await (await fetch(`${s.gateway.url}/_tollgate/ledger`, { headers: { "x-api-key": s.keys.selfpay } })).json();
      expect(ledger.entries).toHaveLength(0);
    } finally {
      await s.close();
    }
  });

  it("strips payment headers a normal tenant sends, and pays with the gateway's wallet", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme" }]);
    try {
      const r = await search(
        s.gateway.url,
        s.keys.acme,
        { query: "stripped header" },
        { "payment-signature": "bogus", "x-payment": "bogus" },
      );
      expect(r.status).toBe(200);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
    } finally {
      await s.close();
    }
  });
});
