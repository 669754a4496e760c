// The Worker sells to x402 v1 clients and lets a wallet come back with sign-in-with-x (workerd + Durable Objects + the
// local chain): `x402-fetch` (the frozen v1 client: the 402's JSON body, X-PAYMENT) holding only a funded wallet buys a
// search, a sandbox (exec) and a browser session (CDP through the Worker); the wallet then reads its sandbox with a
// SIGN-IN-WITH-X proof (@x402/extensions' client, a viem account's real signature) verified inside workerd; the same
// proof again is refused, another wallet's gets 404.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createPublicClient, erc20Abi, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createSigner, wrapFetchWithPayment } from "x402-fetch";
import { SIGN_IN_WITH_X, wrapFetchWithSIWx } from "@x402/extensions/sign-in-with-x";
import worker from "../../src/host/worker.js";
import { buySessionThroughWorker } from "./cdp.js";
import { standInCalls } from "./stand-ins.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };

function workerEnv() {
  const config = {
    server: { logLevel: "error", publicOrigin: "https://gateway.test" },
    upstream: {
      baseUrl: stack.controlUrl,
      allowedHosts: [new URL(stack.runtimeUrl).host, `localhost:${new URL(stack.runtimeUrl).port}`, new URL(stack.controlUrl).host],
    },
    payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50", rpc: { [stack.network]: stack.rpcUrl } },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [],
    sales: {
      facilitator: stack.sales.facilitatorUrl,
      // The local token offered to v1 clients under the v1 name x402-fetch knows ("base-sepolia").
      accept: [
        {
          network: stack.network,
          asset: stack.asset,
          name: stack.sales.tokenName,
          version: stack.sales.tokenVersion,
          decimals: 6,
          v1Network: "base-sepolia",
        },
      ],
      prices: { search: { price: "0.02" }, sandbox: { price: "0.05", minutes: 10 }, session: { price: "0.04", minutes: 10 } },
    },
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.sales.v1SellerKey,
    TOLLGATE_TOKEN_SECRET: "v".repeat(40),
  };
}

const chain = createPublicClient({ transport: http(stack.rpcUrl) });
const balanceOf = (who: string) =>
  chain.readContract({ address: stack.asset as `0x${string}`, abi: erc20Abi, functionName: "balanceOf", args: [who as `0x${string}`] });

describe("the Worker sells to x402 v1 and signs wallets in (workerd)", () => {
  const e = workerEnv();
  const throughWorker = (input: RequestInfo | URL, init?: RequestInit) => worker.fetch(new Request(input, init), e as never, ctx);
  const post = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("x402-fetch (v1) buys a search: X-PAYMENT verified and settled, the chain shows both transfers", async () => {
    const pay = wrapFetchWithPayment(
      throughWorker as typeof fetch,
      await createSigner("base-sepolia", stack.sales.v1BuyerKey as `0x${string}`),
    );
    const [buyerBefore, sellerBefore] = [await balanceOf(stack.sales.v1Buyer), await balanceOf(stack.sales.v1Seller)];
    const r = await pay("https://gateway.test/x402/web/search", post({ query: "edge proxy caching, v1" }));
    expect(r.status).toBe(200);
    expect(((await r.json()) as { data: { results: unknown[] } }).data.results.length).toBeGreaterThan(0);
    expect(r.headers.get("x-tollgate-sale")).toBe("charged");
    const receipt = JSON.parse(atob(r.headers.get("x-payment-response")!)) as { success: boolean; payer: string };
    expect(receipt).toMatchObject({ success: true, payer: stack.sales.v1Buyer });
    // 0.02 from the buyer; the Worker's wallet keeps it less the 0.005 it paid the upstream.
    expect(buyerBefore - (await balanceOf(stack.sales.v1Buyer))).toBe(20_000n);
    expect((await balanceOf(stack.sales.v1Seller)) - sellerBefore).toBe(15_000n);
  });

  it("x402-fetch (v1) buys a sandbox (exec through the Worker) and a browser session (CDP through the Worker)", async () => {
    const pay = wrapFetchWithPayment(
      throughWorker as typeof fetch,
      await createSigner("base-sepolia", stack.sales.v1BuyerKey as `0x${string}`),
    );
    const buyerBefore = await balanceOf(stack.sales.v1Buyer);
    const bought = await pay("https://gateway.test/api/sandbox", post({ imageName: "node" }));
    expect(bought.status).toBe(200);
    const sbx = (await bought.json()) as { id: string; token: string; runtime: { baseUrl: string } };
    const token = bought.headers.get("x-tollgate-wallet-token")!;
    try {
      const exec = await throughWorker(`${sbx.runtime.baseUrl}/exec`, {
        method: "POST",
        headers: { authorization: `Bearer ${sbx.token}`, "content-type": "application/json" },
        body: JSON.stringify({ command: "echo v1-in-workerd" }),
      });
      expect(exec.status).toBe(200);
      expect(JSON.stringify(await exec.json())).toContain("v1-in-workerd");
    } finally {
      await throughWorker(`https://gateway.test/api/sandbox/${sbx.id}/stop`, {
        method: "PUT",
        headers: { authorization: `Bearer ${token}` },
      });
    }
    await buySessionThroughWorker(pay, throughWorker, post({}));
    // 0.05 + 0.04 from the buyer, each settled after the upstream created what was bought.
    expect(buyerBefore - (await balanceOf(stack.sales.v1Buyer))).toBe(90_000n);
  }, 120_000);

  it("the v1 buyer's sandbox: reached again with sign-in-with-x, once per proof; another wallet's proof gets 404", async () => {
    const pay = wrapFetchWithPayment(
      throughWorker as typeof fetch,
      await createSigner("base-sepolia", stack.sales.v1BuyerKey as `0x${string}`),
    );
    const bought = await pay("https://gateway.test/api/sandbox", post({ imageName: "node" }));
    expect(bought.status).toBe(200);
    const { id } = (await bought.json()) as { id: string };

    // Without a credential: the 402 carries the sign-in challenge.
    const unsigned = await throughWorker(`https://gateway.test/api/sandbox/${id}`);
    expect(unsigned.status).toBe(402);
    expect(((await unsigned.json()) as { code: string }).code).toBe("sign_in_required");

    /** fetch through the Worker that signs in with `key` on a 402 carrying the challenge, recording the proofs it sent. */
    const signingIn = (key: `0x${string}`) => {
      const sent: string[] = [];
      const f = wrapFetchWithSIWx(async (input, init) => {
        const req = new Request(input, init);
        const proof = req.headers.get(SIGN_IN_WITH_X);
        if (proof) sent.push(proof);
        return throughWorker(req);
      }, privateKeyToAccount(key));
      return { fetch: f, sent };
    };
    const owner = signingIn(stack.sales.v1BuyerKey as `0x${string}`);
    const read = await owner.fetch(`https://gateway.test/api/sandbox/${id}`);
    expect(read.status).toBe(200);
    expect(((await read.json()) as { id: string }).id).toBe(id);
    expect(owner.sent).toHaveLength(1);
    // The same proof again: its nonce is used (kept fleet-wide in the Durable Objects).
    const replay = await throughWorker(`https://gateway.test/api/sandbox/${id}`, { headers: { [SIGN_IN_WITH_X]: owner.sent[0]! } });
    expect(replay.status).toBe(401);
    expect(((await replay.json()) as { code: string }).code).toBe("invalid_siwx_nonce");
    // Another wallet, signed in for real, does not see it.
    const other = signingIn(`0x${"22".repeat(32)}`);
    expect((await other.fetch(`https://gateway.test/api/sandbox/${id}`)).status).toBe(404);
    expect(other.sent).toHaveLength(1);
    // The owner stops it, signed in.
    const stop = await owner.fetch(`https://gateway.test/api/sandbox/${id}/stop`, { method: "PUT" });
    expect(stop.status).toBe(200);
    // The proofs were verified by the Worker's own code (viem), none of the bundle's stand-ins (ethers among them) called.
    expect(standInCalls()).toEqual([]);
  });
});
