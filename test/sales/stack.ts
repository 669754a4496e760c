// A selling gateway in front of the emulator (x402 half + local chain, sandboxes, sessions), and buyers that hold only a
// funded wallet on the local chain: @x402/fetch (v2) and x402-fetch (v1).
import { randomBytes } from "node:crypto";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { toClientEvmSigner } from "@x402/evm";
import { createWalletClient, defineChain, erc20Abi, http, maxUint256, parseEther } from "viem";
import { PERMIT2_ADDRESS } from "../../src/payments/index.js";
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

export interface SellingOptions {
  prices?: Record<string, unknown>;
  buyer?: Record<string, unknown>;
  payments?: Record<string, unknown>;
  /** Other [sales] fields (e.g. mcp). */
  sales?: Record<string, unknown>;
  /** [state] (default: memory, in the process). */
  state?: Record<string, unknown>;
}

export async function startSellingGateway(emulator: EmulatorHandle, opts: SellingOptions = {}): Promise<SellingStack> {
  const chain = emulator.chain!;
  const wallet = await chain.createFundedWallet(10_000_000n);
  const adminKey = generateTenantKey();
  const config = parseConfig(await sellingConfig(emulator, opts, adminKey));
  const logs: string[] = [];
  const secrets: Secrets = { upstreamApiKey: emulator.apiKey, walletKey: wallet.privateKey, tokenSecret: randomBytes(32).toString("hex") };
  const gateway = await startNodeGateway({ config, secrets, logSink: (l) => logs.push(l) });
  return { emulator, gateway, wallet, adminKey, logs, close: () => gateway.close() };
}

/** The selling gateway's configuration (before parsing: a config file's content), its operator holding `adminKey`. */
export async function sellingConfig(emulator: EmulatorHandle, opts: SellingOptions, adminKey: string): Promise<Record<string, unknown>> {
  const chain = emulator.chain!;
  return {
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
    ...(opts.state ? { state: opts.state } : {}),
  };
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

/** A buyer whose wallet approved Permit2 once (its only transaction), paying with `upto` (and `exact` beside it). */
export async function uptoBuyer(emu: EmulatorHandle, funds = 1_000_000n) {
  const chain = emu.chain!;
  const w = await chain.createFundedWallet(funds);
  const account = privateKeyToAccount(w.privateKey);
  const pub = (chain as unknown as { publicClient: Parameters<typeof toClientEvmSigner>[1] }).publicClient;
  await (pub as unknown as { request: (a: unknown) => Promise<unknown> }).request({
    method: "anvil_setBalance",
    params: [w.address, `0x${parseEther("1").toString(16)}`],
  });
  const local = defineChain({
    id: chain.chainId,
    name: "local",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  const wallet = createWalletClient({ account, chain: local, transport: http(chain.rpcUrl) });
  const hash = await wallet.writeContract({
    address: chain.token.address,
    abi: erc20Abi,
    functionName: "approve",
    args: [PERMIT2_ADDRESS, maxUint256],
  });
  await (pub as unknown as { waitForTransactionReceipt: (a: unknown) => Promise<unknown> }).waitForTransactionReceipt({ hash });
  const client = new x402Client().setSpendControls(spendControls(emu));
  client.register("eip155:*", new UptoEvmScheme(toClientEvmSigner(account, pub)));
  return { ...w, client, pay: wrapFetchWithPayment(fetch, client) as typeof fetch };
}

export const startSalesEmulator = (modules: Array<"x402" | "sandboxes" | "sessions"> = ["x402"]): Promise<EmulatorHandle> =>
  startEmulator({ modules });

export const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
