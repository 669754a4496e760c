// The gateway's wallet: signs a chosen option with the scheme that pays it (src/payments/schemes/), through whatever
// holds the key (./wallet-signer.ts: the local key, or a PKCS#11 token). Everything else sees this, or its address.
import type { PaymentRequired } from "./wire.js";
import type { PaymentOption } from "./requirements.js";
import { schemeFor } from "./schemes/index.js";
import type { SignedFields, SignedPayment } from "./schemes/types.js";
import type { WalletSigner } from "./wallet-signer.js";

export class PaymentSigner {
  /** A private field, not a property: no log or JSON of an object holding the signer shows what holds the key. */
  readonly #wallet: WalletSigner;
  /** The wallet's address (what readiness reads the balance of). */
  readonly address: `0x${string}`;
  /** Which signer holds the key ("local", "pkcs11"). */
  readonly kind: WalletSigner["kind"];

  constructor(wallet: WalletSigner) {
    this.#wallet = wallet;
    this.address = wallet.address;
    this.kind = wallet.kind;
  }

  /**
   * The authorization a signature of `option` will carry, chosen now (before the reservation holds it); undefined when
   * no scheme pays the option.
   */
  authorization(option: PaymentOption, maxLifetimeSeconds: number, nowMs: number): SignedFields | undefined {
    return schemeFor(option)?.authorization(option, this.address, maxLifetimeSeconds, nowMs);
  }

  /** Signs exactly `option`, with an authorization that lives at most `maxLifetimeSeconds`: `preset`'s when given. */
  async sign(
    paymentRequired: PaymentRequired,
    option: PaymentOption,
    maxLifetimeSeconds: number,
    preset?: SignedFields,
  ): Promise<SignedPayment> {
    const scheme = schemeFor(option);
    if (!scheme) throw new Error(`no payment scheme pays ${option.scheme} on ${option.network}`);
    return scheme.sign(this.#wallet, paymentRequired, option, maxLifetimeSeconds, preset);
  }
}
