// Signing through the x402 library (@x402/core + @x402/evm; never hand-rolled EIP-712), shared by the EVM schemes: the
// option echoed exactly as sent, the lifetime capped by policy, and the payment-identifier extension on every payment.
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { PaymentRequired } from "../wire.js";
import type { PaymentOption } from "../requirements.js";
import type { SignedFields, SignedPayment } from "./types.js";
import type { WalletSigner } from "../wallet-signer.js";
import { withPaymentIdentifier } from "./payment-identifier.js";

/** The library's signer shape over whatever holds the key: an address and EIP-712 signatures, nothing else. */
export type LibrarySigner = { address: `0x${string}`; signTypedData: WalletSigner["signTypedData"] };

/** What a scheme's payload says of its authorization: its id (nonce), when it lapses, and who pays. */
export type ReadAuthorization = (payload: unknown) => SignedFields | undefined;

/** How long an authorization for `option` lives: the option's own timeout capped by policy, never under 10 s. */
export const lifetimeOf = (option: PaymentOption, maxLifetimeSeconds: number) =>
  Math.max(10, Math.min(option.maxTimeoutSeconds, maxLifetimeSeconds));

/**
 * Chooses an authorization before anything is signed, so the ledger can hold it with the reservation (one state call:
 * the hold is the durable record of what may be signed): a fresh random 32-byte nonce (0x-hex for EIP-3009, a uint256
 * in decimal for Permit2, as the library draws them), validBefore `lifetimeOf` from `nowMs`, and the wallet as payer.
 * Signing with it (`signWithLibrary`'s `preset`) signs exactly these values.
 */
export function chooseAuthorization(
  option: PaymentOption,
  payer: `0x${string}`,
  maxLifetimeSeconds: number,
  nowMs: number,
  nonceKind: "eip3009" | "permit2",
): SignedFields {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const hex = `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  return {
    nonce: nonceKind === "permit2" ? BigInt(hex).toString() : hex,
    validBefore: Math.floor(nowMs / 1000) + lifetimeOf(option, maxLifetimeSeconds),
    payer,
  };
}

/**
 * The library draws its own nonce and end time; with a preset they are replaced by the chosen ones in the typed data
 * the wallet signs (the library still builds it: domain, types and every other field are its own), keeping each
 * value's type. Only one signature per payment is expected: a second one is refused.
 */
function presetSigner(wallet: WalletSigner, preset: SignedFields): LibrarySigner {
  let signed = 0;
  return {
    address: wallet.address,
    signTypedData: (data) => {
      if (++signed > 1) throw new Error("a preset authorization signs one message only");
      const message = { ...(data.message as Record<string, unknown>) };
      const as = (was: unknown, v: string | number) => (typeof was === "bigint" ? BigInt(v) : String(v));
      if (!("nonce" in message) || !("validBefore" in message || "deadline" in message))
        throw new Error("the payment library signed a message without a nonce and an end time");
      message.nonce = as(message.nonce, preset.nonce);
      if ("validBefore" in message) message.validBefore = as(message.validBefore, preset.validBefore);
      if ("deadline" in message) message.deadline = as(message.deadline, preset.validBefore);
      return wallet.signTypedData({ ...data, message } as typeof data);
    },
  };
}

/** Puts the preset's nonce and end time in the payload the library built (what the seller verifies the signature on). */
function withPreset(payload: unknown, preset: SignedFields): void {
  const p = payload as { authorization?: Record<string, unknown>; permit2Authorization?: Record<string, unknown> };
  if (p?.authorization) {
    p.authorization.nonce = preset.nonce;
    p.authorization.validBefore = String(preset.validBefore);
  } else if (p?.permit2Authorization) {
    p.permit2Authorization.nonce = preset.nonce;
    p.permit2Authorization.deadline = String(preset.validBefore);
  }
}

/**
 * Signs exactly `option` with the scheme `register` puts on a fresh client, with an authorization that lives at most
 * `maxLifetimeSeconds` (the library computes its end from maxTimeoutSeconds, so the cap is applied there; the option
 * echoed back stays as the upstream sent it). With `preset` (chooseAuthorization), its nonce and validBefore are the
 * ones signed; the payload is checked to carry exactly them.
 */
export async function signWithLibrary(
  wallet: WalletSigner,
  paymentRequired: PaymentRequired,
  option: PaymentOption,
  maxLifetimeSeconds: number,
  register: (client: x402Client, signer: LibrarySigner) => void,
  read: ReadAuthorization,
  preset?: SignedFields,
): Promise<SignedPayment> {
  const lifetime = lifetimeOf(option, maxLifetimeSeconds);
  const capped = { ...option.raw, maxTimeoutSeconds: lifetime } as unknown as PaymentRequirements;
  const client = new x402Client(() => capped).setSpendControls(false);
  register(
    client,
    preset ? presetSigner(wallet, preset) : { address: wallet.address, signTypedData: (data) => wallet.signTypedData(data) },
  );
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
  if (preset) withPreset(payload.payload, preset);
  const auth = read(payload.payload);
  if (!auth) throw new Error("the payment library produced a payload without the authorization its scheme signs");
  if (
    preset &&
    (auth.nonce !== preset.nonce || auth.validBefore !== preset.validBefore || auth.payer.toLowerCase() !== preset.payer.toLowerCase())
  )
    throw new Error("the signed authorization is not the one the ledger holds");
  const headers = http.encodePaymentSignatureHeader(payload);
  const [name, value] = Object.entries(headers)[0];
  return { header: [name, value], ...auth, ...(paymentId ? { paymentId } : {}) };
}
