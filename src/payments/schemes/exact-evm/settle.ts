// exact-EVM on chain: an EIP-3009 authorization was used iff the token's authorizationState(payer, nonce) is true.
import { createClient, http, type Client } from "viem";
import { readContract } from "viem/actions";
import type { LedgerEntry } from "../../../state/types.js";
import type { ChainVerdict } from "../types.js";

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

/** One client per RPC URL, kept for the process. */
const clients = new Map<string, Client>();

function clientFor(url: string): Client {
  let c = clients.get(url);
  if (!c) {
    c = createClient({ transport: http(url, { retryCount: 1, timeout: 10_000 }) });
    clients.set(url, c);
  }
  return c;
}

export async function exactEvmVerdict(entry: LedgerEntry, rpc: Record<string, string>): Promise<ChainVerdict> {
  const url = entry.network ? rpc[entry.network] : undefined;
  if (!url || !entry.asset) return "no-rpc";
  const used = await readContract(clientFor(url), {
    address: entry.asset as `0x${string}`,
    abi: AUTHORIZATION_STATE_ABI,
    functionName: "authorizationState",
    args: [entry.payer as `0x${string}`, entry.nonce as `0x${string}`],
  });
  return used ? "used" : "unused";
}
