// The x402 library's own facilitator, in process, settling on the local chain; wrapped as a resource server.
import { createWalletClient, defineChain, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Facilitator } from "@x402/core/facilitator";
import { x402ResourceServer, type FacilitatorClient } from "@x402/core/server";
import type { SupportedResponse } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { UptoEvmScheme as UptoFacilitatorScheme } from "@x402/evm/upto/facilitator";
import { UptoEvmScheme as UptoServerScheme } from "@x402/evm/upto/server";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { EVM_NETWORK_CHAIN_ID_MAP } from "@x402/evm/v1";
import type { ChainHandle } from "../types.js";

export interface LocalFacilitator {
  facilitator: x402Facilitator;
  resourceServer: x402ResourceServer;
  /** The v1 network name of the chain (`base-sepolia` for 84532), or undefined when v1 has no name for it. */
  v1Network?: string;
  /** The account that sends settlements (an `upto` payer names it in what it signs). */
  address: `0x${string}`;
}

/** Asked before each settlement's receipt is awaited: true makes it answer `settlement_pending` (the tx still mines). */
export type PendingSwitch = () => boolean;

export async function createLocalFacilitator(chain: ChainHandle, pending: PendingSwitch = () => false): Promise<LocalFacilitator> {
  const account = privateKeyToAccount(chain.facilitatorKey);
  const viemChain = defineChain({
    id: chain.chainId,
    name: `local ${chain.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  // A short polling interval: anvil mines on receipt, so waiting 4 s (viem's default) would only add latency.
  const client = createWalletClient({
    account,
    chain: viemChain,
    transport: http(chain.rpcUrl, { retryCount: 0 }),
    pollingInterval: 20,
  }).extend(publicActions);
  const base = toFacilitatorEvmSigner({ ...client, address: account.address } as unknown as Parameters<typeof toFacilitatorEvmSigner>[0], {
    confirmationTimeoutMs: 30_000,
  });
  // `settlement_pending` as a real facilitator gives it: the transaction was sent, its receipt not seen in time.
  const signer: typeof base = {
    ...base,
    waitForTransactionReceipt: (args) =>
      pending() ? Promise.reject(new Error("receipt not seen within the emulator's pending window")) : base.waitForTransactionReceipt(args),
  };
  const facilitator = new x402Facilitator();
  // `exact` pays over EIP-3009 or Permit2 (by the payload's shape); `upto` over Permit2 only.
  registerExactEvmScheme(facilitator, { signer, networks: [chain.network] });
  facilitator.register([chain.network], new UptoFacilitatorScheme(signer));
  // One account sends every settlement: concurrent sends would race for the same account nonce and fail, so they
  // queue (as a real facilitator's per-account sender does).
  let queue: Promise<unknown> = Promise.resolve();
  const settleNow = facilitator.settle.bind(facilitator);
  facilitator.settle = ((payload: Parameters<typeof settleNow>[0], requirements: Parameters<typeof settleNow>[1]) => {
    const run = queue.then(() => settleNow(payload, requirements));
    queue = run.catch(() => undefined);
    return run;
  }) as typeof facilitator.settle;
  const asClient: FacilitatorClient = {
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    getSupported: async () => facilitator.getSupported() as SupportedResponse,
  };
  const resourceServer = new x402ResourceServer(asClient)
    .register(chain.network, new ExactEvmScheme())
    .register(chain.network, new UptoServerScheme());
  await resourceServer.initialize();
  const v1Network = Object.entries(EVM_NETWORK_CHAIN_ID_MAP).find(([, id]) => id === chain.chainId)?.[0];
  return { facilitator, resourceServer, v1Network, address: account.address };
}
