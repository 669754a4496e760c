// exact-EVM signing: an EIP-3009 transferWithAuthorization, or a Permit2 witness transfer when the option says
// `extra.assetTransferMethod: "permit2"` (any ERC-20; the wallet must have approved Permit2: `tollgate wallet approve`).
// The library picks the method from the option; the EIP-2612 and ERC-20 approval sponsoring extensions stay off (the
// signer gives the library no chain reads), so no approval is ever signed silently.
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import type { PaymentRequired } from "../../wire.js";
import type { PaymentOption } from "../../requirements.js";
import type { SignedPayment } from "../types.js";
import type { WalletSigner } from "../../wallet-signer.js";
import { signWithLibrary, type ReadAuthorization } from "../library-sign.js";
import { readPermit2Authorization } from "../permit2.js";

const readExact: ReadAuthorization = (payload) => {
  const p = payload as { authorization?: { nonce?: string; validBefore?: string | number; from?: string } };
  const auth = p?.authorization;
  if (auth?.nonce && auth.validBefore && auth.from)
    return { nonce: String(auth.nonce), validBefore: Number(auth.validBefore), payer: String(auth.from) };
  return readPermit2Authorization(payload);
};

/** Signs exactly `option`, with an authorization that lives at most `maxLifetimeSeconds`. */
export function signExactEvm(
  wallet: WalletSigner,
  paymentRequired: PaymentRequired,
  option: PaymentOption,
  maxLifetimeSeconds: number,
): Promise<SignedPayment> {
  return signWithLibrary(
    wallet,
    paymentRequired,
    option,
    maxLifetimeSeconds,
    (client, signer) => registerExactEvmScheme(client, { signer }),
    readExact,
  );
}
