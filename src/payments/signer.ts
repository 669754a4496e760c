// Signs x402 payments with the gateway's wallet through @x402/core + @x402/evm (never hand-rolled EIP-712).
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import type { PaymentOption } from "./requirements.js";

export interface SignedPayment {
  /** Header name and value to send upstream (PAYMENT-SIGNATURE for v2, X-PAYMENT for v1). */
  header: [string, string];
  nonce: string;
  validBefore: number;
  payer: string;
}

export class PaymentSigner {
  private readonly account: PrivateKeyAccount;

  constructor(privateKey: `0x${string}`) {
    this.account = privateKeyToAccount(privateKey);
  }

  get address(): string {
    return this.account.address;
  }

  /**
   * Signs exactly `option`, with an authorization that lives at most `maxLifetimeSeconds`. The library computes
   * validBefore from maxTimeoutSeconds, so the cap is applied there; the option echoed back stays as the upstream sent it.
   */
  async sign(paymentRequired: Record<string, any>, option: PaymentOption, maxLifetimeSeconds: number): Promise<SignedPayment> {
    const lifetime = Math.max(10, Math.min(option.maxTimeoutSeconds, maxLifetimeSeconds));
    const capped = { ...option.raw, maxTimeoutSeconds: lifetime };
    const client = new x402Client(() => capped as any).setSpendControls(false);
    registerExactEvmScheme(client, { signer: this.account });
    const http = new x402HTTPClient(client);
    const payload: Record<string, any> = await client.createPaymentPayload({ ...paymentRequired, accepts: [capped] } as any);
    if (payload.x402Version !== 1) payload.accepted = option.raw;
    const auth = payload.payload?.authorization;
    if (!auth?.nonce || !auth?.validBefore) throw new Error("the payment library produced a payload without an EIP-3009 authorization");
    const headers = http.encodePaymentSignatureHeader(payload as any);
    const [name, value] = Object.entries(headers)[0];
    return { header: [name, value], nonce: String(auth.nonce), validBefore: Number(auth.validBefore), payer: String(auth.from) };
  }
}
