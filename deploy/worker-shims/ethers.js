// `ethers` in the Worker: nothing. @signinwithethereum/siwe (under @x402/extensions' sign-in-with-x) imports it
// dynamically, in a try/catch, only to verify a signature with ethers when no other verifier is given; the gateway
// verifies SIWX proofs with viem (src/sales/siwx.ts) and only formats messages with siwe. Importing it is counted and
// refused (never.js), so the import's promise rejects and siwe's catch answers "no ethers".
import { never } from "./never.js";

never("ethers", "ethers is not bundled in the Worker: sign-in-with-x proofs are verified with viem");
export const ethers = undefined;
