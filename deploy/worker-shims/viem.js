// `viem` in the Worker: all of viem but createPublicClient, whose decorator pulls in every public action (~135 KiB
// minified with ox). The gateway reads the chain with createClient + the one action it needs (readContract);
// @x402/evm calls createPublicClient only when its scheme is registered with RPC options, which the gateway never
// passes (src/payments/schemes/exact-evm/sign.ts). A call is counted and refused (never.js).
import { never } from "./never.js";

export * from "../../node_modules/viem/_esm/index.js";

export function createPublicClient() {
  never("viem.createPublicClient", "createPublicClient is not available in the Worker: use createClient with viem/actions");
}
