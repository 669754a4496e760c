// The Worker sells (workerd + Durable Objects + the local chain): a buyer holding only a funded wallet pays the Worker's
// 402 with @x402/fetch (run inside workerd too), the Worker verifies and settles through the emulator's facilitator
// over HTTP, pays the upstream its search, and the chain shows both transfers.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createPublicClient, erc20Abi, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import worker from "../../src/host/worker.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };

function workerEnv() {
  const config = {
    server: { logLevel: "error" },
    upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host] },
    payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50", rpc: { [stack.network]: stack.rpcUrl } },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [],
    sales: {
      facilitator: stack.sales.facilitatorUrl,
      accept: [{ network: stack.network, asset: stack.asset, name: stack.sales.tokenName, version: stack.sales.tokenVersion, decimals: 6 }],
      prices: { search: { price: "0.02" } },
    },
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.sales.walletKey,
    TOLLGATE_TOKEN_SECRET: "s".repeat(40),
  };
}

const chain = createPublicClient({ transport: http(stack.rpcUrl) });
const balanceOf = (who: string) =>
  chain.readContract({ address: stack.asset as `0x${string}`, abi: erc20Abi, functionName: "balanceOf", args: [who as `0x${string}`] });

describe("the Worker sells over x402 (workerd + Durable Objects + local chain)", () => {
  it("sells a search to a wallet: 402, then the paid retry settled after the upstream answered", async () => {
    const e = workerEnv();
    const throughWorker = (input: RequestInfo | URL, init?: RequestInit) => worker.fetch(new Request(input, init), e as never, ctx);
    const unpaid = await throughWorker("https://gateway.test/x402/web/search", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "edge proxy caching" }),
    });
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get("payment-required")).toBeTruthy();

    const client = new x402Client().setSpendControls({
      allowedAssets: [{ network: stack.network as `${string}:${string}`, asset: stack.asset, maxAmountPerPayment: "100000" }],
    });
    registerExactEvmScheme(client, { signer: privateKeyToAccount(stack.sales.buyerKey as `0x${string}`) });
    const [buyerBefore, sellerBefore] = [await balanceOf(stack.sales.buyer), await balanceOf(stack.sales.wallet)];
    const r = await wrapFetchWithPayment(throughWorker as typeof fetch, client)("https://gateway.test/x402/web/search", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "edge proxy caching" }),
    });
    expect(r.status).toBe(200);
    expect((await r.json()).data.results.length).toBeGreaterThan(0);
    expect(decodePaymentResponseHeader(r.headers.get("payment-response")!)).toMatchObject({ success: true, payer: stack.sales.buyer });
    // The buyer paid 0.02; the Worker's wallet kept it less the 0.005 it paid the upstream.
    expect(buyerBefore - (await balanceOf(stack.sales.buyer))).toBe(20_000n);
    expect((await balanceOf(stack.sales.wallet)) - sellerBefore).toBe(15_000n);
  });
});
