// The gateway's wallet: signs a chosen option with the scheme that pays it (src/payments/schemes/). The only holder of
// the wallet key past the entry: everything else sees the signer, or its address.
import { privateKeyToAccount } from "viem/accounts";
import type { PaymentRequired } from "./wire.js";
import type { PaymentOption } from "./requirements.js";
import { schemeFor } from "./schemes/index.js";
import type { SignedPayment, WalletKey } from "./schemes/types.js";

export class PaymentSigner {
  /** A private field, not a property: the key is not enumerable, so no log or JSON of an object holding the signer shows it. */
  readonly #key: WalletKey;
  /** The wallet's address (what readiness reads the balance of). */
  readonly address: `0x${string}`;

  constructor(key: WalletKey) {
    this.#key = key;
    this.address = privateKeyToAccount(key).address;
  }

  /** Signs exactly `option`, with an authorization that lives at most `maxLifetimeSeconds`. */
  async sign(paymentRequired: PaymentRequired, option: PaymentOption, maxLifetimeSeconds: number): Promise<SignedPayment> {
    const scheme = schemeFor(option);
    if (!scheme) throw new Error(`no payment scheme pays ${option.scheme} on ${option.network}`);
    return scheme.sign(this.#key, paymentRequired, option, maxLifetimeSeconds);
  }
}
