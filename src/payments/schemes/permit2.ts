// Permit2 (Uniswap's canonical contract, the same address on every EVM chain), as the `exact`-over-Permit2 and `upto`
// schemes use it: the wallet approves Permit2 once per token (`tollgate wallet approve`, never silently), then signs
// witness transfers whose unordered nonces Permit2 marks used in a bitmap (what the chain says of a held payment).
// Chain reads with `createClient` + the actions they need (what the Worker bundle keeps of viem: docs/worker-bundle.md).
import { createClient, erc20Abi, http, type Client } from "viem";
import { getTransactionReceipt, readContract } from "viem/actions";
import type { PaymentOption } from "../requirements.js";
import type { ChainVerdict } from "./types.js";

export const PERMIT2_ADDRESS = "0x000000000022D473030F116dDEE9F6B43aC78BA3" as const;

const PERMIT2_ABI = [
  {
    type: "function",
    name: "nonceBitmap",
    stateMutability: "view",
    inputs: [
      { name: "owner", type: "address" },
      { name: "wordPos", type: "uint256" },
    ],
    outputs: [{ type: "uint256" }],
  },
] as const;

/** One client per RPC URL, kept for the process. */
const clients = new Map<string, Client>();

export function rpcClient(url: string): Client {
  let c = clients.get(url);
  if (!c) {
    c = createClient({ transport: http(url, { retryCount: 1, timeout: 10_000 }) });
    clients.set(url, c);
  }
  return c;
}

/** Whether an option is paid over Permit2 (`upto` always; `exact` when the seller says `assetTransferMethod: "permit2"`). */
export const paysOverPermit2 = (option: PaymentOption) =>
  option.scheme === "upto" || (option.raw.extra as { assetTransferMethod?: unknown } | undefined)?.assetTransferMethod === "permit2";

/** A Permit2 nonce as the ledger keeps it: the uint256 in decimal (EIP-3009 nonces are 0x-hex). */
export const isPermit2Nonce = (nonce: string | undefined) => !!nonce && /^\d{1,78}$/.test(nonce);

/** What a Permit2 payload says of its authorization (its nonce, deadline and payer), or undefined. */
export function readPermit2Authorization(payload: unknown): { nonce: string; validBefore: number; payer: string } | undefined {
  const auth = (payload as { permit2Authorization?: { nonce?: unknown; deadline?: unknown; from?: unknown } })?.permit2Authorization;
  if (auth?.nonce === undefined || auth.deadline === undefined || typeof auth.from !== "string") return undefined;
  return { nonce: String(auth.nonce), validBefore: Number(auth.deadline), payer: auth.from };
}

/** The wallet's ERC-20 allowance to Permit2 for `asset`, read through `rpcUrl`. */
export async function permit2Allowance(rpcUrl: string, asset: string, owner: string): Promise<bigint> {
  return readContract(rpcClient(rpcUrl), {
    address: asset as `0x${string}`,
    abi: erc20Abi,
    functionName: "allowance",
    args: [owner as `0x${string}`, PERMIT2_ADDRESS],
  });
}

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const topicOf = (address: string) => `0x${address.slice(2).toLowerCase().padStart(64, "0")}`;

/**
 * What `transaction` moved of `asset` from `payer` to `payee` (the ERC-20 Transfer logs of its receipt), or undefined
 * when it failed or moved nothing: an `upto` settlement's actual amount, which Permit2's nonce alone does not say.
 */
export async function transferredIn(
  rpcUrl: string,
  transaction: string,
  asset: string,
  payer: string,
  payee: string,
): Promise<bigint | undefined> {
  const receipt = await getTransactionReceipt(rpcClient(rpcUrl), { hash: transaction as `0x${string}` });
  if (receipt.status !== "success") return undefined;
  let total = 0n;
  for (const log of receipt.logs) {
    if (log.address.toLowerCase() !== asset.toLowerCase() || log.topics[0] !== TRANSFER_TOPIC) continue;
    if (log.topics[1]?.toLowerCase() !== topicOf(payer) || log.topics[2]?.toLowerCase() !== topicOf(payee)) continue;
    total += BigInt(log.data);
  }
  return total > 0n ? total : undefined;
}

/** Whether Permit2 has used `owner`'s `nonce`: the settlement went through ("used") or not yet ("unused"). */
export async function permit2Verdict(rpcUrl: string, owner: string, nonce: string): Promise<ChainVerdict> {
  const n = BigInt(nonce);
  const bitmap = await readContract(rpcClient(rpcUrl), {
    address: PERMIT2_ADDRESS,
    abi: PERMIT2_ABI,
    functionName: "nonceBitmap",
    args: [owner as `0x${string}`, n >> 8n],
  });
  return (bitmap >> (n & 0xffn)) & 1n ? "used" : "unused";
}
