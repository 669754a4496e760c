// The seam a payment scheme plugs into: how its options are recognised, how the gateway signs one, what the ledger keeps
// of the signature, and how the chain says whether a held authorization was used. One folder per scheme (exact-evm/),
// each passing test/payments/scheme-contract.ts.
import type { LedgerEntry } from "../../state/types.js";
import type { PaymentRequired } from "../wire.js";
import type { PaymentOption } from "../requirements.js";
import type { WalletSigner } from "../wallet-signer.js";

/** A wallet key in hex (TOLLGATE_WALLET_KEY): what the local signer holds (../wallet-signer.ts). */
export type WalletKey = `0x${string}`;

/**
 * What the ledger records of a signature with its reservation, before anything is signed: an id of the
 * authorization that is unique per signature, the unix second after which it can no longer be settled, and who pays.
 */
export interface SignedFields {
  nonce: string;
  validBefore: number;
  payer: string;
}

export interface SignedPayment extends SignedFields {
  /** Header name and value to send upstream (PAYMENT-SIGNATURE for v2, X-PAYMENT for v1). */
  header: [string, string];
  /** The payment-identifier extension's id (v2): the same on a resend of this payment, deduplicated by the seller. */
  paymentId?: string;
}

/** Where a held authorization stands on chain: used (commit), unused and expired (release), or no RPC to ask (keep held). */
export type ChainVerdict = "used" | "unused" | "no-rpc";

export interface PaymentScheme {
  /** The x402 `scheme` of the options it pays (`exact`, `upto`). */
  readonly scheme: string;
  /**
   * The option's amount is a maximum the seller may settle below (`upto`): the ledger reserves it, then settles to the
   * amount the settlement answer names and releases the rest.
   */
  readonly settlesBelowAmount?: boolean;
  /** Whether it can pay an option (its scheme, and a network it knows how to sign for). */
  accepts(option: PaymentOption): boolean;
  /**
   * Chooses the authorization a signature of `option` will carry (nonce, validBefore, payer) before anything is signed,
   * so the ledger holds it with the reservation (../schemes/library-sign.ts chooseAuthorization).
   */
  authorization(option: PaymentOption, payer: `0x${string}`, maxLifetimeSeconds: number, nowMs: number): SignedFields;
  /**
   * Signs exactly `option` with `wallet` (whatever holds the key), with an authorization living at most
   * `maxLifetimeSeconds`; with `preset` (from `authorization`), that very nonce and validBefore.
   */
  sign(
    wallet: WalletSigner,
    paymentRequired: PaymentRequired,
    option: PaymentOption,
    maxLifetimeSeconds: number,
    preset?: SignedFields,
  ): Promise<SignedPayment>;
  /** Whether a ledger entry (signed fields, network, asset) is one of this scheme's authorizations. */
  owns(entry: LedgerEntry): boolean;
  /** Asks the chain about a signed entry through the RPC URL configured for its network (`rpc[network]`); throws when the RPC fails. */
  verdict(entry: LedgerEntry, rpc: Record<string, string>): Promise<ChainVerdict>;
  /**
   * For a scheme settling below its amount (`upto`): what a used entry's settlement `transaction` moved from its payer
   * to its payee, read from the receipt; undefined when it cannot be told (the reserved maximum then stands).
   */
  settledOnChain?(entry: LedgerEntry, transaction: string, rpc: Record<string, string>): Promise<bigint | undefined>;
}
