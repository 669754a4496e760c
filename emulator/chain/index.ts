// The local EVM chain for x402: anvil from npm, our EIP-3009 TestUSDC deployed, a Multicall3 stand-in, dev wallets.
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  parseEther,
  type Abi,
  type Hex,
  type PublicClient,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createRequire } from "node:module";
import type { ChainHandle, EmulatorLog } from "../types.js";
import { startAnvil } from "./anvil.js";

const require = createRequire(import.meta.url);
const testUsdcArtifact = require("./contracts/TestUSDC.json") as { abi: Abi; bytecode: Hex };
const multicallArtifact = require("./contracts/Multicall3.json") as { abi: Abi; deployedBytecode: Hex };
const permit2Artifact = require("./contracts/Permit2Lite.json") as { abi: Abi; deployedBytecode: Hex };
const exactProxyArtifact = require("./contracts/X402ExactPermit2Proxy.json") as { deployedBytecode: Hex };
const uptoProxyArtifact = require("./contracts/X402UptoPermit2Proxy.json") as { deployedBytecode: Hex };

/** Where Multicall3 lives on every public chain; the x402 facilitator reads through it to explain failures. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;
/**
 * Where Permit2 and x402's two Permit2 proxies live on public chains (the x402 EVM package's constants): our own
 * stand-ins (contracts/Permit2Lite.sol, X402{Exact,Upto}Permit2Proxy.sol) are placed there, so the `exact`-over-Permit2
 * and `upto` schemes sign and settle here exactly as there.
 */
export const PERMIT2_ADDRESS = "0x000000000022D473030F116dDEE9F6B43aC78BA3" as const;
export const EXACT_PERMIT2_PROXY_ADDRESS = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001" as const;
export const UPTO_PERMIT2_PROXY_ADDRESS = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002" as const;

/**
 * Chain id 84532 (Base Sepolia's id) by default: x402 v1 names networks ("base-sepolia") and knows no name for
 * 31337, so a v1 client can only sign for the local token when the local chain borrows a named testnet id.
 * The token address is fresh on every run (random deployer), so nothing signed here is valid anywhere else.
 */
export const DEFAULT_CHAIN_ID = 84532;

export interface StartChainOptions {
  /** Interface anvil listens on; loopback only. */
  host?: string;
  log?: EmulatorLog;
  /** 0 or absent: anvil picks a free port. */
  port?: number;
  chainId?: number;
  /** EIP-712 domain of the token; must match `extra.name` / `extra.version` in payment requirements. */
  tokenName?: string;
  tokenVersion?: string;
  tokenSymbol?: string;
}

export interface LocalChainHandle extends ChainHandle {
  /** Milliseconds from startChain() to ready (anvil up, token deployed, Multicall3 placed, facilitator funded). */
  startupMs: number;
  publicClient: PublicClient;
  /** Process id of anvil (its own process group). */
  pid: number;
}

/** Starts anvil and deploys everything x402 needs. Resolves when a payment could be settled. */
export async function startChain(opts: StartChainOptions = {}): Promise<LocalChainHandle> {
  const t0 = performance.now();
  const host = opts.host ?? "127.0.0.1";
  const chainId = opts.chainId ?? DEFAULT_CHAIN_ID;
  const log = opts.log ?? (() => {});
  const tokenName = opts.tokenName ?? "USD Coin";
  const tokenVersion = opts.tokenVersion ?? "2";
  const tokenSymbol = opts.tokenSymbol ?? "USDC";

  const anvil = await startAnvil({ host, port: opts.port, chainId });
  try {
    const chain = defineChain({
      id: chainId,
      name: `Tollgate local chain ${chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
      contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
    });
    const transport = http(anvil.rpcUrl, { batch: false, retryCount: 0 });
    const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 }) as PublicClient;
    const rpc = (method: string, params: unknown[]) => publicClient.request({ method: method as never, params: params as never });

    // Keys are made here and now, never committed: the deployer mints, the facilitator pays settlement gas.
    const deployer = privateKeyToAccount(generatePrivateKey());
    const facilitatorKey = generatePrivateKey();
    const facilitator = privateKeyToAccount(facilitatorKey);
    const payee = privateKeyToAccount(generatePrivateKey()).address;
    const ether = `0x${parseEther("1000").toString(16)}`;
    await Promise.all([
      rpc("anvil_setBalance", [deployer.address, ether]),
      rpc("anvil_setBalance", [facilitator.address, ether]),
      rpc("anvil_setCode", [MULTICALL3_ADDRESS, multicallArtifact.deployedBytecode]),
      rpc("anvil_setCode", [PERMIT2_ADDRESS, permit2Artifact.deployedBytecode]),
      rpc("anvil_setCode", [EXACT_PERMIT2_PROXY_ADDRESS, exactProxyArtifact.deployedBytecode]),
      rpc("anvil_setCode", [UPTO_PERMIT2_PROXY_ADDRESS, uptoProxyArtifact.deployedBytecode]),
    ]);
    const deployerWallet = createWalletClient({ account: deployer, chain, transport });
    const deployHash = await deployerWallet.deployContract({
      abi: testUsdcArtifact.abi,
      bytecode: testUsdcArtifact.bytecode,
      args: [tokenName, tokenSymbol, tokenVersion],
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash: deployHash, pollingInterval: 20 });
    if (!receipt.contractAddress || receipt.status !== "success") throw new Error("TestUSDC deployment failed");
    const tokenAddress = getAddress(receipt.contractAddress);

    // Mints go out one at a time from one account so nonces never collide.
    let mintQueue: Promise<unknown> = Promise.resolve();
    const mint = (to: `0x${string}`, amount: bigint) => {
      const run = mintQueue.then(async () => {
        const hash = await deployerWallet.writeContract({
          address: tokenAddress,
          abi: testUsdcArtifact.abi,
          functionName: "mint",
          args: [to, amount],
        });
        const r = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 });
        if (r.status !== "success") throw new Error(`mint to ${to} reverted`);
      });
      mintQueue = run.catch(() => {});
      return run;
    };

    const startupMs = Math.round(performance.now() - t0);
    log("chain.ready", { rpcUrl: anvil.rpcUrl, chainId, token: tokenAddress, startupMs });
    let closed = false;
    return {
      rpcUrl: anvil.rpcUrl,
      chainId,
      network: `eip155:${chainId}`,
      token: { address: tokenAddress, name: tokenName, version: tokenVersion, decimals: 6, symbol: tokenSymbol },
      payee,
      facilitatorKey,
      startupMs,
      publicClient,
      pid: anvil.pid,
      async createFundedWallet(tokenAmount: bigint) {
        const privateKey = generatePrivateKey();
        const { address } = privateKeyToAccount(privateKey);
        if (tokenAmount > 0n) await mint(address, tokenAmount);
        return { address, privateKey };
      },
      async balanceOf(address) {
        return (await publicClient.readContract({
          address: tokenAddress,
          abi: testUsdcArtifact.abi,
          functionName: "balanceOf",
          args: [address],
        })) as bigint;
      },
      async permit2NonceUsed(owner, nonce) {
        const bitmap = (await publicClient.readContract({
          address: PERMIT2_ADDRESS,
          abi: permit2Artifact.abi,
          functionName: "nonceBitmap",
          args: [owner, nonce >> 8n],
        })) as bigint;
        return ((bitmap >> (nonce & 0xffn)) & 1n) === 1n;
      },
      async allowance(owner, spender) {
        return (await publicClient.readContract({
          address: tokenAddress,
          abi: testUsdcArtifact.abi,
          functionName: "allowance",
          args: [owner, spender],
        })) as bigint;
      },
      async authorizationState(authorizer, nonce) {
        return (await publicClient.readContract({
          address: tokenAddress,
          abi: testUsdcArtifact.abi,
          functionName: "authorizationState",
          args: [authorizer, nonce],
        })) as boolean;
      },
      async close() {
        if (closed) return;
        closed = true;
        await anvil.stop();
        log("chain.closed", {});
      },
    };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}

export { testUsdcArtifact };
