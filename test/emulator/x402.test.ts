// The paid search and fetch routes, paid by a real @x402/fetch client and settled on the local anvil chain.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodePaymentResponseHeader, x402HTTPClient } from "@x402/fetch";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { json, startX402Harness, type X402Harness } from "./x402-harness.js";

let h: X402Harness;

beforeAll(async () => {
  h = await startX402Harness();
});
afterAll(async () => {
  await h?.close();
});

async function challenge(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(h.origin + path, { ...json(body), headers: { "content-type": "application/json", ...headers } });
  const header = res.headers.get("payment-required");
  return { res, body: await res.json(), required: header ? (decodePaymentRequiredHeader(header) as PaymentRequired) : undefined };
}

/** Signs a payment for what `path` + `body` costs, without sending it. */
async function signFor(client: import("@x402/fetch").x402Client, path: string, body: unknown) {
  const c = await challenge(path, body);
  const http = new x402HTTPClient(client);
  const payload = await client.createPaymentPayload(http.getPaymentRequiredResponse((n) => c.res.headers.get(n), c.body));
  const auth = (payload.payload as { authorization: { from: `0x${string}`; nonce: `0x${string}` } }).authorization;
  return { headers: http.encodePaymentSignatureHeader(payload), auth };
}

describe("x402 challenge", () => {
  it("answers an unpaid search with 402, a v2 PAYMENT-REQUIRED header and a JSON body", async () => {
    const { res, body, required } = await challenge("/x402/web/search", { query: "solar panels" });
    expect(res.status).toBe(402);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(required!.x402Version).toBe(2);
    expect(required!.resource.url).toBe(`${h.origin}/x402/web/search`);
    expect(required!.accepts).toEqual([
      {
        scheme: "exact",
        network: h.chain.network,
        amount: "5000",
        asset: h.chain.token.address,
        payTo: h.chain.payee,
        maxTimeoutSeconds: 120,
        extra: { name: "USD Coin", version: "2" },
      },
    ]);
    expect(body).toMatchObject({
      code: "payment_required",
      x402Version: 1,
      accepts: [{ scheme: "exact", network: "base-sepolia", maxAmountRequired: "5000" }],
    });
    expect(typeof body.message).toBe("string");
  });

  it("prices by request: search with location, fetch by options (capped), sessions by timeout tier", async () => {
    const amount = async (path: string, body: unknown) => (await challenge(path, body)).required!.accepts[0].amount;
    expect(await amount("/x402/web/search", { query: "coffee", location: { country: "US" } })).toBe("10000");
    expect(await amount("/x402/web/fetch", { url: "https://example.com/" })).toBe("1000");
    expect(await amount("/x402/web/fetch", { url: "https://example.com/", stealth: "auto" })).toBe("3000");
    expect(await amount("/x402/web/fetch", { url: "https://example.com/", outputs: { formats: [{ type: "json" }] } })).toBe("6000");
    expect(
      await amount("/x402/web/fetch", {
        url: "https://example.com/",
        stealth: "ultra",
        browser: { location: { country: "DE" } },
        outputs: { formats: [{ type: "json" }] },
      }),
    ).toBe("15000");
    const tiers: Array<[number | undefined, string]> = [
      [5, "10000"],
      [10, "20000"],
      [15, "30000"],
      [20, "50000"],
      [undefined, "50000"],
      [45, "80000"],
      [60, "100000"],
    ];
    for (const [timeoutMinutes, price] of tiers) {
      expect(await amount("/x402/session", timeoutMinutes === undefined ? {} : { timeoutMinutes })).toBe(price);
    }
  });

  it("rejects a malformed body with 400 before any payment is asked for", async () => {
    for (const [path, body, field] of [
      ["/x402/web/search", { page: 2 }, "query"],
      ["/x402/web/search", { query: "x", filters: { filetype: "exe" } }, "filters.filetype"],
      ["/x402/web/fetch", { url: "not a url" }, "url"],
      ["/x402/session", { timeoutMinutes: 2 }, "timeoutMinutes"],
      ["/x402/session", { screen: { width: 100, height: 720 } }, "screen.width"],
      ["/x402/session", { useProxy: true }, "useProxy"],
    ] as const) {
      const res = await fetch(h.origin + path, json(body));
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.headers.get("payment-required")).toBeNull();
      const err = await res.json();
      expect(err.code).toBe("invalid_request");
      expect(err.message).toContain(field);
    }
    const bad = await fetch(h.origin + "/x402/web/search", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{nope",
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).code).toBe("invalid_json");
  });
});

describe("x402 payment", () => {
  it("pays for a search and moves exactly the price from payer to payee on chain", async () => {
    const payer = await h.payer(1_000_000n);
    const payeeBefore = await h.chain.balanceOf(h.chain.payee);
    const res = await payer.pay(h.origin + "/x402/web/search", json({ query: "solar panels" }));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ status: "completed", data: { query: "solar panels" } });
    expect(body.jobId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.data.results.length).toBeGreaterThan(0);
    const receipt = decodePaymentResponseHeader(res.headers.get("payment-response")!);
    expect(receipt).toMatchObject({ success: true, network: h.chain.network, payer: payer.address });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await h.chain.balanceOf(payer.address)).toBe(1_000_000n - 5000n);
    expect(await h.chain.balanceOf(h.chain.payee)).toBe(payeeBefore + 5000n);
    const sent = JSON.parse(Buffer.from(payer.sent[0]["payment-signature"], "base64").toString());
    expect(await h.chain.authorizationState(payer.address, sent.payload.authorization.nonce)).toBe(true);
  });

  it("refuses a replayed PAYMENT-SIGNATURE with the facilitator's reason, and takes no more money", async () => {
    const payer = await h.payer(100_000n);
    const first = await payer.pay(h.origin + "/x402/web/search", json({ query: "espresso" }));
    expect(first.status).toBe(200);
    const balance = await h.chain.balanceOf(payer.address);
    const replay = await fetch(h.origin + "/x402/web/search", {
      ...json({ query: "espresso" }),
      headers: { "content-type": "application/json", ...payer.sent[0] },
    });
    expect(replay.status).toBe(402);
    const body = await replay.json();
    expect(body.code).toBe("invalid_exact_evm_nonce_already_used");
    expect(decodePaymentRequiredHeader(replay.headers.get("payment-required")!).error).toBe("invalid_exact_evm_nonce_already_used");
    expect(await h.chain.balanceOf(payer.address)).toBe(balance);
  });

  it("serves one of two concurrent requests carrying the same authorization and charges once", async () => {
    const payer = await h.payer(100_000n);
    const { headers } = await signFor(payer.client, "/x402/web/search", { query: "bread" });
    const send = () =>
      fetch(h.origin + "/x402/web/search", { ...json({ query: "bread" }), headers: { "content-type": "application/json", ...headers } });
    const statuses = (await Promise.all([send(), send()])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 402]);
    expect(await h.chain.balanceOf(payer.address)).toBe(100_000n - 5000n);
  });

  it("settles many payers at once, each for exactly the price", async () => {
    const payers = await Promise.all([1, 2, 3, 4, 5].map(() => h.payer(20_000n)));
    const payeeBefore = await h.chain.balanceOf(h.chain.payee);
    const responses = await Promise.all(payers.map((p, i) => p.pay(h.origin + "/x402/web/search", json({ query: `coral reefs ${i}` }))));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    for (const p of payers) expect(await h.chain.balanceOf(p.address)).toBe(15_000n);
    expect(await h.chain.balanceOf(h.chain.payee)).toBe(payeeBefore + 25_000n);
  });

  it("answers an unfunded payer with 402 and the facilitator's insufficient-balance reason", async () => {
    const payer = await h.payer(0n);
    const res = await payer.pay(h.origin + "/x402/web/search", json({ query: "mars rovers" }));
    expect(res.status).toBe(402);
    const body = await res.json();
    expect(body).toMatchObject({ code: "invalid_exact_evm_insufficient_balance" });
    expect(body.message).toContain("invalid_exact_evm_insufficient_balance");
    expect(decodePaymentRequiredHeader(res.headers.get("payment-required")!).error).toBe("invalid_exact_evm_insufficient_balance");
  });

  it("rejects a malformed body with 400 even when it carries a valid payment, and moves no money", async () => {
    const payer = await h.payer(50_000n);
    const { headers, auth } = await signFor(payer.client, "/x402/web/search", { query: "vaccines" });
    const payeeBefore = await h.chain.balanceOf(h.chain.payee);
    const res = await fetch(h.origin + "/x402/web/search", {
      ...json({ query: 42 }),
      headers: { "content-type": "application/json", ...headers },
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("payment-response")).toBeNull();
    expect(await h.chain.balanceOf(payer.address)).toBe(50_000n);
    expect(await h.chain.balanceOf(h.chain.payee)).toBe(payeeBefore);
    expect(await h.chain.authorizationState(auth.from, auth.nonce)).toBe(false);
  });

  it("refuses a payment signed for a cheaper request (search without location used for one with location)", async () => {
    const payer = await h.payer(50_000n);
    const { headers } = await signFor(payer.client, "/x402/web/search", { query: "housing" });
    const res = await fetch(h.origin + "/x402/web/search", {
      ...json({ query: "housing", location: { country: "GB" } }),
      headers: { "content-type": "application/json", ...headers },
    });
    expect(res.status).toBe(402);
    expect((await res.json()).code).toBe("no_matching_payment_requirements");
    expect(await h.chain.balanceOf(payer.address)).toBe(50_000n);
  });

  it("pays for a fetch of a corpus page and returns its content", async () => {
    const payer = await h.payer(50_000n);
    const search = await payer.pay(h.origin + "/x402/web/search", json({ query: "kubernetes deployments" }));
    const url = (await search.json()).data.results[0].url;
    const res = await payer.pay(h.origin + "/x402/web/fetch", json({ url, outputs: { formats: ["markdown", "html", "links"] } }));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.status).toBe("completed");
    expect(body.data.metadata).toMatchObject({ url, statusCode: 200 });
    expect(body.data.markdown).toMatch(/^# /);
    expect(body.data.html).toContain("<h1>");
    expect(body.data.links.length).toBeGreaterThan(0);
    expect(await h.chain.balanceOf(payer.address)).toBe(50_000n - 5000n - 1000n);
  });

  it("does not charge for a fetch that fails: unknown URL gives a failed job and no settlement", async () => {
    const payer = await h.payer(50_000n);
    const res = await payer.pay(h.origin + "/x402/web/fetch", json({ url: "https://nowhere.invalid/missing" }));
    expect(res.status).toBe(404);
    expect(res.headers.get("payment-response")).toBeNull();
    const body = await res.json();
    expect(body).toMatchObject({ status: "failed", code: "page_not_found" });
    expect(body.error).toContain("nowhere.invalid");
    expect(await h.chain.balanceOf(payer.address)).toBe(50_000n);
  });

  it("does not charge for a search that cannot run (no searchable terms)", async () => {
    const payer = await h.payer(50_000n);
    const res = await payer.pay(h.origin + "/x402/web/search", json({ query: "the of and" }));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ status: "failed" });
    expect(body.error).toMatch(/no searchable terms/);
    expect(await h.chain.balanceOf(payer.address)).toBe(50_000n);
  });

  it("serves an x402 v1 client: v1 challenge in the body, X-PAYMENT in, X-PAYMENT-RESPONSE out", async () => {
    const payer = await h.payer(50_000n);
    const unpaid = await fetch(h.origin + "/x402/web/search", json({ query: "marathon" }));
    const v1Challenge = await unpaid.json(); // what a v1 client reads; it ignores PAYMENT-REQUIRED
    expect(v1Challenge.x402Version).toBe(1);
    const payload = await payer.client.createPaymentPayload(v1Challenge);
    expect(payload.x402Version).toBe(1);
    const headers = new x402HTTPClient(payer.client).encodePaymentSignatureHeader(payload);
    expect(Object.keys(headers)).toEqual(["X-PAYMENT"]);
    const res = await fetch(h.origin + "/x402/web/search", {
      ...json({ query: "marathon" }),
      headers: { "content-type": "application/json", ...headers },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("payment-response")).toBeNull();
    expect(decodePaymentResponseHeader(res.headers.get("x-payment-response")!)).toMatchObject({ success: true, payer: payer.address });
    expect(await h.chain.balanceOf(payer.address)).toBe(50_000n - 5000n);
  });

  it("acts as a v1-only server when asked with `x402-version: 1`, and @x402/fetch pays it over v1", async () => {
    const payer = await h.payer(50_000n);
    const init = { ...json({ query: "honey bees" }), headers: { "content-type": "application/json", "x402-version": "1" } };
    const unpaid = await fetch(h.origin + "/x402/web/search", init);
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get("payment-required")).toBeNull();
    const res = await payer.pay(h.origin + "/x402/web/search", init);
    expect(res.status).toBe(200);
    expect(Object.keys(payer.sent[0])).toEqual(["x-payment"]);
    expect(decodePaymentResponseHeader(res.headers.get("x-payment-response")!).success).toBe(true);
    expect(await h.chain.balanceOf(payer.address)).toBe(50_000n - 5000n);
  });

  it("keeps paid calls fast (timings are reported for the README)", async () => {
    const payer = await h.payer(1_000_000n);
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const res = await payer.pay(h.origin + "/x402/web/search", json({ query: `python ${i}` }));
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      ms.push(performance.now() - t);
    }
    ms.sort((a, b) => a - b);
    console.log(
      `[x402 timings] chain start ${h.timings.chainMs.toFixed(0)} ms, x402 module ${h.timings.moduleMs.toFixed(0)} ms, ` +
        `paid search (402 → sign → verify → settle) median ${ms[2].toFixed(0)} ms, max ${ms[4].toFixed(0)} ms`,
    );
    expect(ms[2]).toBeLessThan(2000);
  });
});
