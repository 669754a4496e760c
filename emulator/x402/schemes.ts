// What the emulator's paid routes demand, and how their settlements behave: the scheme per route (exact over EIP-3009,
// exact over Permit2, upto, or an offer nobody here can pay), what an `upto` seller settles, `settlement_pending`, the
// payment-identifier extension, and lost answers. One mutable object: a change takes effect on the next request.

/** The scheme a paid route asks for. */
export type X402SchemeMode =
  /** `exact` over EIP-3009 transferWithAuthorization (v2, and v1 in the body): the default. */
  | "exact"
  /** `exact` over Permit2 (any ERC-20; the payer must have approved Permit2 once). */
  | "exact-permit2"
  /** `upto` over Permit2: the payer signs the route's price as a maximum, the seller settles `uptoSettlePercent` of it. */
  | "upto"
  /** Only an `exact` offer on Solana devnet: what a gateway that pays EVM chains cannot pay. */
  | "solana";

export interface X402Demand {
  /** Per paid route path (`/x402/web/search`, `/x402/web/fetch`, `/x402/session`); absent: `exact`. */
  schemes: Record<string, X402SchemeMode>;
  /** `upto`: what the seller settles, in percent of the signed maximum (0–100, rounded down); default 60. */
  uptoSettlePercent: number;
  /** Settlements answer `settlement_pending`: the transaction is sent and mines, its receipt is not awaited. */
  settlementPending: boolean;
  /** The next this-many paid answers are lost after settling (the connection is dropped); default 0. */
  dropAnswers: number;
}

export function resolveDemand(d: Partial<X402Demand> = {}): X402Demand {
  const percent = d.uptoSettlePercent ?? 60;
  if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new Error("x402.uptoSettlePercent must be within 0–100");
  return {
    schemes: { ...d.schemes },
    uptoSettlePercent: percent,
    settlementPending: !!d.settlementPending,
    dropAnswers: d.dropAnswers ?? 0,
  };
}

/** The payment-identifier extension as the emulator declares it (optional for the payer; the x402 extensions spec). */
export const PAYMENT_IDENTIFIER = "payment-identifier";
export const paymentIdentifierDeclaration = {
  info: { required: false },
  schema: {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: {
      required: { type: "boolean" },
      id: { type: "string", minLength: 16, maxLength: 128, pattern: "^[a-zA-Z0-9_-]+$" },
    },
    required: ["required"],
  },
};

/** The payment id a payload carries, when well formed. */
export function paymentIdOf(payload: unknown): string | undefined {
  const ext = (payload as { extensions?: Record<string, { info?: { id?: unknown } }> })?.extensions?.[PAYMENT_IDENTIFIER];
  const id = ext?.info?.id;
  return typeof id === "string" && /^[a-zA-Z0-9_-]{16,128}$/.test(id) ? id : undefined;
}

/** A Solana devnet USDC offer (CAIP-2 `solana:<genesis hash>`): well formed, and unpayable by an EVM wallet. */
export const SOLANA_DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
export const SOLANA_DEVNET_USDC = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
