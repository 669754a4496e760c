// The gateway's wallet: signs a chosen option with the scheme that pays it (src/payments/schemes/).
import type { PaymentRequired } from "./wire.js";
import type { PaymentOption } from "./requirements.js";
import { schemeFor } from "./schemes/index.js";
import type { SignedPayment, WalletKey } from "./schemes/types.js";

export class PaymentSigner {
  constructor(private readonly key: WalletKey) {}

  /** Signs exactly `option`, with an authorization that lives at most `maxLifetimeSeconds`. */
  async sign(paymentRequired: PaymentRequired, option: PaymentOption, maxLifetimeSeconds: number): Promise<SignedPayment> {
    const scheme = schemeFor(option);
    if (!scheme) throw new Error(`no payment scheme pays ${option.scheme} on ${option.network}`);
    return scheme.sign(this.key, paymentRequired, option, maxLifetimeSeconds);
  }
}
