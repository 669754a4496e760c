// The Worker sells (workerd + Durable Objects + the local chain): a buyer holding only a funded wallet pays the Worker's
// 402 with @x402/fetch (run inside workerd too), the Worker verifies and settles through the emulator's facilitator
// over HTTP, pays the upstream its search, and the chain shows both transfers. The same buyer buys a sandbox (then
// execs in it through the Worker with the sandbox token handed back) and a browser session (then speaks CDP over the
// Worker's WebSocket relay); the wallet token handed back reads what it bought and stops it.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createPublicClient, erc20Abi, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import worker from "../../src/host/worker.js";
import { buySessionThroughWorker } from "./cdp.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };

function workerEnv() {
  const config = {
    server: { logLevel: "error", publicOrigin: "https://gateway.test" },
    upstream: {
      baseUrl: stack.controlUrl,
      // The emulator's runtime (sandboxes) and CDP hosts, by address and as `localhost` (how it names them).
      allowedHosts: [new URL(stack.runtimeUrl).host, `localhost:${new URL(stack.runtimeUrl).port}`, new URL(stack.controlUrl).host],
    },
    payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50", rpc: { [stack.network]: stack.rpcUrl } },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [],
    sales: {
      facilitator: stack.sales.facilitatorUrl,
      accept: [{ network: stack.network, asset: stack.asset, name: stack.sales.tokenName, version: stack.sales.tokenVersion, decimals: 6 }],
      mcp: true,
      prices: { search: { price: "0.02" }, sandbox: { price: "0.05", minutes: 10 }, session: { price: "0.04", minutes: 10 } },
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
  it("sells a sandbox (exec through the Worker) and a browser session (CDP through the Worker) to a wallet", async () => {
    const e = workerEnv();
    const throughWorker = (input: RequestInfo | URL, init?: RequestInit) => worker.fetch(new Request(input, init), e as never, ctx);
    const client = new x402Client().setSpendControls({
      allowedAssets: [{ network: stack.network as `${string}:${string}`, asset: stack.asset, maxAmountPerPayment: "100000" }],
    });
    registerExactEvmScheme(client, { signer: privateKeyToAccount(stack.sales.buyerKey as `0x${string}`) });
    const pay = wrapFetchWithPayment(throughWorker as typeof fetch, client);
    const post = { method: "POST", headers: { "content-type": "application/json" } };
    const [buyerBefore, sellerBefore] = [await balanceOf(stack.sales.buyer), await balanceOf(stack.sales.wallet)];

    // A sandbox: bought, then exec'd in through the Worker with the sandbox's own gateway token.
    const bought = await pay("https://gateway.test/api/sandbox", { ...post, body: JSON.stringify({ imageName: "node" }) });
    expect(bought.status).toBe(200);
    expect(bought.headers.get("x-tollgate-sale")).toBe("charged");
    const sbx = (await bought.json()) as { id: string; token: string; runtime: { baseUrl: string } };
    expect(sbx.runtime.baseUrl).toBe(`https://gateway.test/sandbox/${sbx.id}`);
    const walletToken = bought.headers.get("x-tollgate-wallet-token")!;
    try {
      const exec = await throughWorker(`${sbx.runtime.baseUrl}/exec`, {
        method: "POST",
        headers: { authorization: `Bearer ${sbx.token}`, "content-type": "application/json" },
        body: JSON.stringify({ command: "echo bought-in-workerd" }),
      });
      expect(exec.status).toBe(200);
      expect(JSON.stringify(await exec.json())).toContain("bought-in-workerd");
      // The wallet token handed back with the purchase reads it (and stops it below).
      expect(
        (await throughWorker(`https://gateway.test/api/sandbox/${sbx.id}`, { headers: { authorization: `Bearer ${walletToken}` } })).status,
      ).toBe(200);
    } finally {
      await throughWorker(`https://gateway.test/api/sandbox/${sbx.id}/stop`, {
        method: "PUT",
        headers: { authorization: `Bearer ${walletToken}` },
      });
    }

    // A browser session: bought, then CDP over the Worker's WebSocket relay.
    await buySessionThroughWorker(pay, throughWorker, { ...post, body: "{}" });
    // Paid on chain: 0.05 + 0.04 from the buyer to the Worker's wallet (the upstream bills the gateway's credits).
    expect(buyerBefore - (await balanceOf(stack.sales.buyer))).toBe(90_000n);
    expect((await balanceOf(stack.sales.wallet)) - sellerBefore).toBe(90_000n);
  }, 120_000);
  it("sells an MCP tool call: the PaymentRequired in the tool result, the payment in _meta, the receipt back", async () => {
    const e = workerEnv();
    const rpc = async (params: Record<string, unknown>) => {
      const r = await worker.fetch(
        new Request("https://gateway.test/mcp", {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": "2026-07-28" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params }),
        }),
        e as never,
        ctx,
      );
      return (await r.json()) as { result: Record<string, any> };
    };
    const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28" };
    const call = { name: "web_search", arguments: { query: "edge proxy caching" } };
    const unpaid = await rpc({ ...call, _meta: meta });
    expect(unpaid.result).toMatchObject({ isError: true, structuredContent: { x402Version: 2, accepts: [expect.any(Object)] } });

    const client = new x402Client().setSpendControls({
      allowedAssets: [{ network: stack.network as `${string}:${string}`, asset: stack.asset, maxAmountPerPayment: "100000" }],
    });
    registerExactEvmScheme(client, { signer: privateKeyToAccount(stack.sales.buyerKey as `0x${string}`) });
    const before = await balanceOf(stack.sales.buyer);
    const payment = await client.createPaymentPayload(unpaid.result.structuredContent);
    const paid = await rpc({ ...call, _meta: { ...meta, "x402/payment": payment } });
    expect(paid.result.isError).toBeFalsy();
    expect(paid.result.structuredContent.data.results.length).toBeGreaterThan(0);
    expect(paid.result._meta["x402/payment-response"]).toMatchObject({ success: true, payer: stack.sales.buyer });
    expect(before - (await balanceOf(stack.sales.buyer))).toBe(20_000n);
  });
});
