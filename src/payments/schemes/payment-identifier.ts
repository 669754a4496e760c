// The payment-identifier extension (x402 v2 extensions): an idempotency id the seller and its facilitator deduplicate
// on. The gateway puts a fresh one on every payment it signs, and sends the very same payment (same id) when it sends
// it again after a lost answer, so a seller that already took it answers what it answered, not a second charge.
const PAYMENT_IDENTIFIER = "payment-identifier";

const SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    required: { type: "boolean" },
    id: { type: "string", minLength: 16, maxLength: 128, pattern: "^[a-zA-Z0-9_-]+$" },
  },
  required: ["required"],
} as const;

/** A fresh id: `pay_` and 32 hex digits (16–128 of [A-Za-z0-9_-], as the extension requires). */
const newPaymentId = () => `pay_${crypto.randomUUID().replace(/-/g, "")}`;

/**
 * The payload's extensions with a payment id: the seller's declaration echoed with the id added when it declared the
 * extension, else the extension as the spec writes it (not required, with its schema).
 */
export function withPaymentIdentifier(
  extensions: Record<string, unknown> | undefined,
  declared: Record<string, unknown> | undefined,
  id: string = newPaymentId(),
): { extensions: Record<string, unknown>; id: string } {
  const theirs = declared?.[PAYMENT_IDENTIFIER];
  const info = theirs && typeof theirs === "object" ? (theirs as { info?: unknown }).info : undefined;
  const base =
    info && typeof info === "object"
      ? { ...(theirs as Record<string, unknown>), info: { ...(info as Record<string, unknown>), id } }
      : { info: { required: false, id }, schema: SCHEMA };
  return { extensions: { ...extensions, [PAYMENT_IDENTIFIER]: base }, id };
}
