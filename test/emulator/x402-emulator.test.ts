// The x402 half inside the composed emulator (startEmulator), as the gateway's tests and `tollgate dev` run it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { x402Client, wrapFetchWithPayment, decodePaymentResponseHeader } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";

let emu: EmulatorHandle;
let startMs = 0;

beforeAll(async () => {
  const t = performance.now();
  emu = await startEmulator({ modules: ["x402"] });
  startMs = performance.now() - t;
});
afterAll(async () => {
  await emu?.close();
});

describe("startEmulator({ modules: ['x402'] })", () => {
  it("starts the chain and serves paid search and a paid session through one listener", async () => {
    const chain = emu.chain!;
    expect(chain.network).toBe("eip155:84532");
    const wallet = await chain.createFundedWallet(100_000n);
    const client = new x402Client().setSpendControls({
      allowedAssets: [{ network: chain.network, asset: chain.token.address, maxAmountPerPayment: "100000" }],
    });
    registerExactEvmScheme(client, { signer: privateKeyToAccount(wallet.privateKey) });
    const pay = wrapFetchWithPayment(fetch, client);

    const res = await pay(`${emu.controlUrl}/x402/web/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "inflation" }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).data.results.length).toBeGreaterThan(0);

    const s = await pay(`${emu.controlUrl}/x402/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ timeoutMinutes: 5 }),
    });
    expect(s.status).toBe(200);
    expect(decodePaymentResponseHeader(s.headers.get("payment-response")!).success).toBe(true);
    const session = await s.json();
    expect(session.wsEndpoint).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\//);
    const stop = await fetch(`${emu.controlUrl}/x402/session/${session.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${session.managementToken}` },
    });
    expect(await stop.json()).toEqual({ success: true });

    expect(await chain.balanceOf(wallet.address)).toBe(100_000n - 5_000n - 10_000n);
    expect(await chain.balanceOf(chain.payee)).toBe(15_000n);
    // Free API-key variant of the same engine:
    const free = await fetch(`${emu.controlUrl}/api/web/search`, {
      method: "POST",
      headers: { "x-api-key": emu.apiKey },
      body: JSON.stringify({ query: "inflation" }),
    });
    expect(free.status).toBe(200);
    console.log(`[x402 timings] startEmulator({modules:["x402"]}) ${startMs.toFixed(0)} ms`);
    expect(startMs).toBeLessThan(10_000);
  });
});
