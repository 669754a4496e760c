// exact-EVM signing: an EIP-3009 transferWithAuthorization, or a Permit2 witness transfer when the option says
// `extra.assetTransferMethod: "permit2"` (any ERC-20; the wallet must have approved Permit2: `tollgate wallet approve`).
// The library picks the method from the option; the EIP-2612 and ERC-20 approval sponsoring extensions stay off (the
// signer gives the library no chain reads), so no approval is ever signed silently.
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import type { PaymentRequired } from "../../wire.js";
import type { PaymentOption } from "../../requirements.js";
import type { SignedFields, SignedPayment } from "../types.js";
import type { WalletSigner } from "../../wallet-signer.js";
import { chooseAuthorization, signWithLibrary, type ReadAuthorization } from "../library-sign.js";
import { readPermit2Authorization } from "../permit2.js";

const readExact: ReadAuthorization = (payload) => {
  const p = payload as { authorization?: { nonce?: string; validBefore?: string | number; from?: string } };
  const auth = p?.authorization;
  if (auth?.nonce && auth.validBefore && auth.from)
    return { nonce: String(auth.nonce), validBefore: Number(auth.validBefore), payer: String(auth.from) };
  return readPermit2Authorization(payload);
};

/** The authorization a signature of `option` will carry: a Permit2 nonce when the option pays over Permit2. */
export function authorizeExactEvm(option: PaymentOption, payer: `0x${string}`, maxLifetimeSeconds: number, nowMs: number): SignedFields {
  const permit2 = (option.raw.extra as { assetTransferMethod?: unknown } | undefined)?.assetTransferMethod === "permit2";
  return chooseAuthorization(option, payer, maxLifetimeSeconds, nowMs, permit2 ? "permit2" : "eip3009");
}

/** Signs exactly `option`, with an authorization that lives at most `maxLifetimeSeconds` (the preset one when given). */
export function signExactEvm(
  wallet: WalletSigner,
  paymentRequired: PaymentRequired,
  option: PaymentOption,
  maxLifetimeSeconds: number,
  preset?: SignedFields,
): Promise<SignedPayment> {
  return signWithLibrary(
    wallet,
    paymentRequired,
    option,
    maxLifetimeSeconds,
    (client, signer) => registerExactEvmScheme(client, { signer }),
    readExact,
    preset,
  );
}
