// Signing through the x402 library (@x402/core + @x402/evm; never hand-rolled EIP-712), shared by the EVM schemes: the
// option echoed exactly as sent, the lifetime capped by policy, and the payment-identifier extension on every payment.
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { PaymentRequired } from "../wire.js";
import type { PaymentOption } from "../requirements.js";
import type { SignedPayment } from "./types.js";
import type { WalletSigner } from "../wallet-signer.js";
import { withPaymentIdentifier } from "./payment-identifier.js";

/** The library's signer shape over whatever holds the key: an address and EIP-712 signatures, nothing else. */
export type LibrarySigner = { address: `0x${string}`; signTypedData: WalletSigner["signTypedData"] };

/** What a scheme's payload says of its authorization: its id (nonce), when it lapses, and who pays. */
export type ReadAuthorization = (payload: unknown) => { nonce: string; validBefore: number; payer: string } | undefined;

/**
 * Signs exactly `option` with the scheme `register` puts on a fresh client, with an authorization that lives at most
 * `maxLifetimeSeconds` (the library computes its end from maxTimeoutSeconds, so the cap is applied there; the option
 * echoed back stays as the upstream sent it).
 */
export async function signWithLibrary(
  wallet: WalletSigner,
  paymentRequired: PaymentRequired,
  option: PaymentOption,
  maxLifetimeSeconds: number,
  register: (client: x402Client, signer: LibrarySigner) => void,
  read: ReadAuthorization,
): Promise<SignedPayment> {
  const lifetime = Math.max(10, Math.min(option.maxTimeoutSeconds, maxLifetimeSeconds));
  const capped = { ...option.raw, maxTimeoutSeconds: lifetime } as unknown as PaymentRequirements;
  const client = new x402Client(() => capped).setSpendControls(false);
  register(client, { address: wallet.address, signTypedData: (data) => wallet.signTypedData(data) });
  const http = new x402HTTPClient(client);
  const payload: PaymentPayload = await client.createPaymentPayload({ ...paymentRequired, accepts: [capped] } as Parameters<
    x402Client["createPaymentPayload"]
  >[0]);
  let paymentId: string | undefined;
  if (payload.x402Version !== 1) {
    payload.accepted = option.raw as unknown as PaymentRequirements;
    const declared = (paymentRequired as { extensions?: Record<string, unknown> }).extensions;
    const withId = withPaymentIdentifier(payload.extensions, declared);
    payload.extensions = withId.extensions;
    paymentId = withId.id;
  }
  const auth = read(payload.payload);
  if (!auth) throw new Error("the payment library produced a payload without the authorization its scheme signs");
  const headers = http.encodePaymentSignatureHeader(payload);
  const [name, value] = Object.entries(headers)[0];
  return { header: [name, value], ...auth, ...(paymentId ? { paymentId } : {}) };
}
