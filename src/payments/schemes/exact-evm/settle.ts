// EVM schemes on chain: an EIP-3009 authorization was used iff the token's authorizationState(payer, nonce) is true; a
// Permit2 one (exact over Permit2, upto) iff Permit2's nonce bitmap has its bit set.
import { readContract } from "viem/actions";
import type { LedgerEntry } from "../../../state/types.js";
import type { ChainVerdict } from "../types.js";
import { isPermit2Nonce, permit2Verdict, rpcClient } from "../permit2.js";

const AUTHORIZATION_STATE_ABI = [
  {
    type: "function",
    name: "authorizationState",
    stateMutability: "view",
    inputs: [
      { name: "authorizer", type: "address" },
      { name: "nonce", type: "bytes32" },
    ],
    outputs: [{ type: "bool" }],
  },
] as const;

export async function exactEvmVerdict(entry: LedgerEntry, rpc: Record<string, string>): Promise<ChainVerdict> {
  const url = entry.network ? rpc[entry.network] : undefined;
  if (!url || !entry.asset) return "no-rpc";
  if (isPermit2Nonce(entry.nonce)) return permit2Verdict(url, entry.payer!, entry.nonce!);
  const used = await readContract(rpcClient(url), {
    address: entry.asset as `0x${string}`,
    abi: AUTHORIZATION_STATE_ABI,
    functionName: "authorizationState",
    args: [entry.payer as `0x${string}`, entry.nonce as `0x${string}`],
  });
  return used ? "used" : "unused";
}
