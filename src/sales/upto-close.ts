// The end of an `upto` sale settled after the fact (a time sale at its stop or window end: ./metered.ts; a job at its
// end: ./job-sales.ts): the facilitator's answer logged, and a settled amount above zero booked with the buyer's
// transaction. One tail for both, so a sale reads the same in the log and the book whatever was sold.
import type { SettleResponse } from "@x402/core/types";
import type { GatewayServices } from "../services.js";
import type { SaleRecord, SalesBook } from "./book.js";

/** What a pending `upto` sale keeps that its book line names. */
interface UptoSale {
  tenant: string;
  payer: string;
  payTo: string;
  row: string;
  requestId?: string;
  paymentId?: string;
  requirements: { asset: string };
}

/**
 * Logs the settlement (`<what> sale settled` or `<what> sale not settled`, with `fields`) and books a settled amount
 * above zero: `units` and `microUsd` are what was settled for, `line` what the kind adds (its class, network, minutes or
 * job). The facilitator's answer is returned as it came.
 */
export async function closeUptoSale(
  services: Pick<GatewayServices, "logger" | "now">,
  book: SalesBook,
  what: "metered" | "job",
  sale: UptoSale,
  settled: SettleResponse,
  amount: { units: bigint; microUsd: bigint },
  fields: Record<string, unknown>,
  line: Pick<SaleRecord, "class" | "network"> & Partial<SaleRecord>,
): Promise<SettleResponse> {
  if (!settled.success) {
    services.logger.error(`${what} sale not settled`, { ...fields, error: settled.errorReason });
    return settled;
  }
  services.logger.info(`${what} sale settled`, { ...fields, transaction: settled.transaction });
  if (amount.units > 0n)
    await book.record({
      at: services.now(),
      tenant: sale.tenant,
      payer: settled.payer ?? sale.payer,
      payTo: sale.payTo,
      row: sale.row,
      asset: sale.requirements.asset,
      amount: settled.amount ?? amount.units.toString(),
      priceMicroUsd: amount.microUsd.toString(),
      transaction: settled.transaction,
      requestId: sale.requestId,
      paymentId: sale.paymentId,
      scheme: "upto",
      ...line,
    });
  return settled;
}
