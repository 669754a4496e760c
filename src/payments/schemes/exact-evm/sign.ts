// exact-EVM signing: an EIP-3009 transferWithAuthorization through @x402/core + @x402/evm (never hand-rolled EIP-712).
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import type { PaymentRequired } from "../../wire.js";
import type { PaymentOption } from "../../requirements.js";
import type { SignedPayment } from "../types.js";
import type { WalletSigner } from "../../wallet-signer.js";

/**
 * Signs exactly `option`, with an authorization that lives at most `maxLifetimeSeconds`. The library computes
 * validBefore from maxTimeoutSeconds, so the cap is applied there; the option echoed back stays as the upstream sent it.
 */
export async function signExactEvm(
  wallet: WalletSigner,
  paymentRequired: PaymentRequired,
  option: PaymentOption,
  maxLifetimeSeconds: number,
): Promise<SignedPayment> {
  const lifetime = Math.max(10, Math.min(option.maxTimeoutSeconds, maxLifetimeSeconds));
  // The option as the upstream sent it, with the capped lifetime: the library's own record type (it reads v1 and v2).
  const capped = { ...option.raw, maxTimeoutSeconds: lifetime } as unknown as PaymentRequirements;
  const client = new x402Client(() => capped).setSpendControls(false);
  registerExactEvmScheme(client, { signer: { address: wallet.address, signTypedData: (data) => wallet.signTypedData(data) } });
  const http = new x402HTTPClient(client);
  const payload: PaymentPayload = await client.createPaymentPayload({ ...paymentRequired, accepts: [capped] } as Parameters<
    x402Client["createPaymentPayload"]
  >[0]);
  if (payload.x402Version !== 1) payload.accepted = option.raw as unknown as PaymentRequirements;
  const auth = (payload.payload as { authorization?: { nonce?: string; validBefore?: string | number; from?: string } }).authorization;
  if (!auth?.nonce || !auth?.validBefore) throw new Error("the payment library produced a payload without an EIP-3009 authorization");
  const headers = http.encodePaymentSignatureHeader(payload);
  const [name, value] = Object.entries(headers)[0];
  return { header: [name, value], nonce: String(auth.nonce), validBefore: Number(auth.validBefore), payer: String(auth.from) };
}
