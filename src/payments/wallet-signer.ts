// The seam between the gateway and whatever holds its wallet's key: an address, and EIP-712 signatures over what the
// payment schemes ask for (the x402 libraries' ClientEvmSigner shape). Which one is configured in `[wallet] signer`:
// "local" (the key in TOLLGATE_WALLET_KEY, below: any runtime), "pkcs11" (the key never leaves an HSM token; Node only,
// src/host/node/pkcs11-signer.ts), "remote" (`tollgate signer serve`, its own process and limits, over a Unix
// socket: src/host/node/remote-signer.ts); the last two picked by the Node entry. See docs/signers.md.
import { privateKeyToAccount } from "viem/accounts";
import type { TypedDataDefinition } from "viem";

/** EIP-712 typed data as the payment schemes hand it over (domain, types, primary type, message). */
export type TypedData = {
  domain: Record<string, unknown>;
  types: Record<string, unknown>;
  primaryType: string;
  message: Record<string, unknown>;
};

export interface WalletSigner {
  /** Which implementation this is (readiness and logs name it; never the key). */
  readonly kind: "local" | "pkcs11" | "remote";
  /** The wallet's address: what pays, and whose balance readiness reads. */
  readonly address: `0x${string}`;
  /** A 65-byte secp256k1 signature (r ‖ s ‖ v, low s) of the EIP-712 hash of `data`. */
  signTypedData(data: TypedData): Promise<`0x${string}`>;
  /** Releases what the signer holds (a PKCS#11 session); the gateway calls it when it closes. */
  close?(): Promise<void>;
}

/** The wallet key held in this process (TOLLGATE_WALLET_KEY): viem's local account, the key in a closure only. */
export function localWalletSigner(key: `0x${string}`): WalletSigner {
  const account = privateKeyToAccount(key);
  return {
    kind: "local",
    address: account.address,
    signTypedData: (data) => account.signTypedData(data as unknown as TypedDataDefinition),
  };
}
