// A selling gateway in front of the emulator (x402 half + local chain, sandboxes, sessions), and buyers that hold only a
// funded wallet on the local chain: @x402/fetch (v2) and x402-fetch (v1).
import { randomBytes } from "node:crypto";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig, type Secrets } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

export interface SellingStack {
  emulator: EmulatorHandle;
  gateway: RunningGateway;
  /** The gateway's wallet: pays the upstream, and is paid by buyers (sales.payTo unset). */
  wallet: { address: `0x${string}`; privateKey: `0x${string}` };
  adminKey: string;
  logs: string[];
  close(): Promise<void>;
}

export async function startSellingGateway(
  emulator: EmulatorHandle,
  opts: {
    prices?: Record<string, unknown>;
    buyer?: Record<string, unknown>;
    payments?: Record<string, unknown>;
    /** Other [sales] fields (e.g. mcp). */
    sales?: Record<string, unknown>;
  } = {},
): Promise<SellingStack> {
  const chain = emulator.chain!;
  const wallet = await chain.createFundedWallet(10_000_000n);
  const adminKey = generateTenantKey();
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "info" },
    upstream: {
      baseUrl: emulator.controlUrl,
      timeoutMs: 30_000,
      // The emulator's runtime and CDP hosts, by address and as `localhost` (how it names them in its answers).
      allowedHosts: [
        new URL(emulator.controlUrl).host,
        new URL(emulator.runtimeUrl).host,
        `localhost:${new URL(emulator.runtimeUrl).port}`,
        `localhost:${new URL(emulator.controlUrl).port}`,
      ],
    },
    payments: {
      networks: [chain.network],
      assets: [chain.token.address],
      maxPerRequest: "0.50",
      rpc: { [chain.network]: chain.rpcUrl },
      ...opts.payments,
    },
    tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(adminKey) }] }],
    sales: {
      facilitator: emulator.facilitator!.url,
      accept: [
        {
          network: chain.network,
          asset: chain.token.address,
          name: chain.token.name,
          version: chain.token.version,
          decimals: chain.token.decimals,
          v1Network: "base-sepolia",
        },
      ],
      prices: opts.prices ?? {
        search: { price: "0.02" },
        sandbox: { price: "0.05", minutes: 10 },
        session: { price: "0.04", minutes: 10 },
      },
      ...(opts.buyer ? { buyer: opts.buyer } : {}),
      ...opts.sales,
    },
  });
  const logs: string[] = [];
  const secrets: Secrets = { upstreamApiKey: emulator.apiKey, walletKey: wallet.privateKey, tokenSecret: randomBytes(32).toString("hex") };
  const gateway = await startNodeGateway({ config, secrets, logSink: (l) => logs.push(l) });
  return { emulator, gateway, wallet, adminKey, logs, close: () => gateway.close() };
}

/** The local token under both of its network names (v2's CAIP-2, v1's "base-sepolia"), up to $1 a payment. */
export function spendControls(emulator: EmulatorHandle) {
  const chain = emulator.chain!;
  return {
    allowedAssets: ([chain.network, "base-sepolia"] as const).map((network) => ({
      network: network as `${string}:${string}`,
      asset: chain.token.address,
      maxAmountPerPayment: "1000000",
    })),
  };
}

export interface Buyer {
  address: `0x${string}`;
  privateKey: `0x${string}`;
  client: x402Client;
  /** fetch that pays the gateway's 402 with this wallet (@x402/fetch, x402 v2). */
  pay: typeof fetch;
}

/** A buyer holding only a funded wallet, paying with @x402/fetch (v2). */
export async function v2Buyer(emulator: EmulatorHandle, funds = 1_000_000n): Promise<Buyer> {
  const w = await emulator.chain!.createFundedWallet(funds);
  const client = new x402Client().setSpendControls(spendControls(emulator));
  registerExactEvmScheme(client, { signer: privateKeyToAccount(w.privateKey) });
  return { ...w, client, pay: wrapFetchWithPayment(fetch, client) as typeof fetch };
}

/** A buyer holding only a funded wallet, paying with x402-fetch (the frozen x402 v1 client: X-PAYMENT, the 402's body). */
export async function v1Buyer(emulator: EmulatorHandle, funds = 1_000_000n): Promise<Omit<Buyer, "client">> {
  const w = await emulator.chain!.createFundedWallet(funds);
  const { createSigner, wrapFetchWithPayment: wrapV1 } = await import("x402-fetch");
  const signer = await createSigner("base-sepolia", w.privateKey);
  return { ...w, pay: wrapV1(fetch, signer) as typeof fetch };
}

export const startSalesEmulator = (modules: Array<"x402" | "sandboxes" | "sessions"> = ["x402"]): Promise<EmulatorHandle> =>
  startEmulator({ modules });

export const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
