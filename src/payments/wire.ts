// x402 records as the upstream sends them: PaymentRequired (v2 `amount` + CAIP-2, v1 `maxAmountRequired` + names), its
// options, and the settlement answer. The x402 library decodes the headers; these type what the gateway reads.
import * as z from "zod";
import { lenient } from "../upstream/records.js";

export const PaymentRequirements = z.looseObject({
  scheme: lenient(z.string()),
  network: lenient(z.string()),
  /** v2: atomic units as a decimal string. */
  amount: lenient(z.string()),
  /** v1's name for the amount. */
  maxAmountRequired: lenient(z.string()),
  asset: lenient(z.string()),
  payTo: lenient(z.string()),
  maxTimeoutSeconds: lenient(z.number()),
  extra: lenient(z.record(z.string(), z.unknown())),
});
export type PaymentRequirements = z.infer<typeof PaymentRequirements>;

export const PaymentRequired = z.looseObject({
  x402Version: z.number().catch(2),
  accepts: z.array(z.unknown()).catch([]),
  resource: lenient(z.unknown()),
  error: lenient(z.string()),
});
export type PaymentRequired = z.infer<typeof PaymentRequired>;

export const SettleResponse = z.looseObject({
  success: z.boolean().catch(false),
  transaction: lenient(z.string()),
  errorReason: lenient(z.string()),
  payer: lenient(z.string()),
  network: lenient(z.string()),
  /** `upto`: the atomic amount the seller settled (at most the signed maximum). */
  amount: lenient(z.string()),
});
export type SettleResponse = z.infer<typeof SettleResponse>;
