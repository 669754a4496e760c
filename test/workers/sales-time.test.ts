// A time sale in the Worker (workerd + Durable Objects + the local chain): no timer outlives a request there, so a
// sandbox sold by the minute (x402 `upto`) and never stopped is settled by a later request after its window ends (the
// sweep beside it: src/sales/due.ts), once; the chain shows the window's price moved from the buyer to the Worker's
// wallet, and the book one line of it.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createPublicClient, erc20Abi, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { toClientEvmSigner } from "@x402/evm";
import worker from "../../src/host/worker.js";
import { hashTenantKey } from "../../src/identity/tenants.js";
import { standInCalls } from "./stand-ins.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };
const ADMIN_KEY = "tg_time_sales_operator_key_0123456789abcdef";
// 0.0017 a minute (the credit table's sandbox minute) with a 100 % markup: the one minute sold, 0.0034.
const WINDOW = 3_400n;

async function workerEnv() {
  const hash = await hashTenantKey(ADMIN_KEY);
  const config = {
    server: { logLevel: "error", publicOrigin: "https://gateway.test" },
    upstream: {
      baseUrl: stack.controlUrl,
      allowedHosts: [new URL(stack.runtimeUrl).host, `localhost:${new URL(stack.runtimeUrl).port}`, new URL(stack.controlUrl).host],
    },
    // The sweep runs beside a request at most once per interval: 1 s here.
    payments: {
      networks: [stack.network],
      assets: [stack.asset],
      maxPerRequest: "0.50",
      rpc: { [stack.network]: stack.rpcUrl },
      reconcileIntervalSeconds: 1,
    },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash }] }],
    sales: {
      facilitator: stack.sales.facilitatorUrl,
      accept: [{ network: stack.network, asset: stack.asset, name: stack.sales.tokenName, version: stack.sales.tokenVersion, decimals: 6 }],
      prices: { sandbox: { markupPercent: 100, minutes: 1, scheme: "upto" } },
    },
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.sales.timeSellerKey,
    TOLLGATE_TOKEN_SECRET: "t".repeat(40),
  };
}

const chain = createPublicClient({ transport: http(stack.rpcUrl) });
const balanceOf = (who: string) =>
  chain.readContract({ address: stack.asset as `0x${string}`, abi: erc20Abi, functionName: "balanceOf", args: [who as `0x${string}`] });

describe("a time sale in the Worker", () => {
  it("is settled by a later request after its window ends, once", async () => {
    const e = await workerEnv();
    const throughWorker = (input: RequestInfo | URL, init?: RequestInit) => worker.fetch(new Request(input, init), e as never, ctx);
    const client = new x402Client().setSpendControls({
      allowedAssets: [{ network: stack.network as `${string}:${string}`, asset: stack.asset, maxAmountPerPayment: "100000" }],
    });
    client.register(
      "eip155:*",
      new UptoEvmScheme(toClientEvmSigner(privateKeyToAccount(stack.sales.timeBuyerKey as `0x${string}`), chain as never)),
    );
    const pay = wrapFetchWithPayment(throughWorker as typeof fetch, client);
    const [buyerBefore, sellerBefore] = [await balanceOf(stack.sales.timeBuyer), await balanceOf(stack.sales.timeSeller)];

    const bought = await pay("https://gateway.test/api/sandbox", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(bought.status).toBe(200);
    expect(bought.headers.get("x-tollgate-sale")).toBe("metered");
    expect(bought.headers.get("x-tollgate-sale-max")).toBe(WINDOW.toString());
    const sold = Date.now();
    const sandbox = (await bought.json()) as { id: string };
    expect(sandbox.id).toBeTruthy();
    // Nothing moves at the purchase, nor on a request before the window's end.
    await throughWorker("https://gateway.test/_tollgate/health");
    expect(await balanceOf(stack.sales.timeBuyer)).toBe(buyerBefore);

    // After the window, requests come in (any row: a health check); one of them settles the sale beside itself.
    while (Date.now() - sold < 60_000) await new Promise((r) => setTimeout(r, 1000));
    let paid = 0n;
    for (let i = 0; i < 60 && paid === 0n; i++) {
      await Promise.all([throughWorker("https://gateway.test/_tollgate/health"), throughWorker("https://gateway.test/_tollgate/health")]);
      await new Promise((r) => setTimeout(r, 1000));
      paid = buyerBefore - (await balanceOf(stack.sales.timeBuyer));
    }
    expect(paid).toBe(WINDOW);
    for (let i = 0; i < 3; i++) {
      await throughWorker("https://gateway.test/_tollgate/health");
      await new Promise((r) => setTimeout(r, 1100));
    }
    expect(buyerBefore - (await balanceOf(stack.sales.timeBuyer))).toBe(WINDOW);
    expect((await balanceOf(stack.sales.timeSeller)) - sellerBefore).toBe(WINDOW);
    // One book line: the window's price, its transaction on chain.
    const report = (await (
      await throughWorker("https://gateway.test/_tollgate/admin/sales?check=chain", { headers: { "x-api-key": ADMIN_KEY } })
    ).json()) as { sales: Array<Record<string, unknown>> };
    expect(report.sales).toHaveLength(1);
    expect(report.sales[0]).toMatchObject({ amount: WINDOW.toString(), scheme: "upto", minutes: 1, chain: "matched" });
    expect(standInCalls()).toEqual([]);
  }, 240_000);
});
