// The inbound books against the chain: each reconciler pass (src/payments/reconcile.ts, on the Node timer and the
// Worker's cron, beside the outbound settlement and the credit drift) looks up every sale of the book the chain has not
// yet confirmed: its settlement's transaction must carry the ERC-20 Transfer of the amount from the payer to the payee
// (./report.ts checkOnChain). A sale the chain does not show (the transaction missing, failed, or moving something else)
// is a mismatch: counted in tollgate_sales_inbound_mismatches, alerted once per transaction (`sales.inbound_mismatch`,
// to the global receivers), and shown to operators on every console page until the books agree again.
import { raiseAlert } from "../operators/alerts/webhooks.js";
import type { GatewayServices } from "../services.js";
import { atomicToUsd } from "../payments/index.js";
import type { SalesBook, SaleRecord } from "./book.js";
import { checkOnChain } from "./report.js";

interface InboundMismatch {
  tenant: string;
  payer: string;
  payTo: string;
  row: string;
  transaction: string;
  /** What the book says the buyer paid, in USD. */
  priceUsd: string;
  at: string;
  /** `missing`: no such transaction on chain; `mismatch`: it failed, or does not carry the transfer. */
  verdict: "missing" | "mismatch";
}

export interface InboundCheck {
  at: string;
  /** Sales looked at this pass (those confirmed before are counted as matched without asking again). */
  checked: number;
  matched: number;
  /** Sales that could not be checked: no `payments.rpc` for their network. */
  unchecked: number;
  mismatches: InboundMismatch[];
}

const YEAR_MS = 366 * 86_400_000;
/** How many not-yet-confirmed sales one pass asks the chain about (the newest). */
const BATCH = 200;
const LAST_KEY = "sales:inbound:last";

export class InboundReconciler {
  /** This instance's last pass (the console's banner reads it without a round trip). */
  last: InboundCheck | undefined;

  constructor(
    private readonly services: GatewayServices,
    private readonly book: SalesBook,
  ) {}

  async runOnce(): Promise<InboundCheck> {
    const { kv } = this.services.stores;
    const sales = await this.book.list();
    const report: InboundCheck = { at: new Date(this.services.now()).toISOString(), checked: 0, matched: 0, unchecked: 0, mismatches: [] };
    const open: SaleRecord[] = [];
    for (const s of sales) {
      if (await kv.get(confirmedKey(s))) report.matched++;
      else open.push(s);
    }
    for (const s of open.slice(-BATCH)) {
      report.checked++;
      const verdict = await checkOnChain(this.services, s);
      if (verdict === "matched") {
        report.matched++;
        await kv.set(confirmedKey(s), "1", YEAR_MS);
        continue;
      }
      if (verdict === "no_rpc") {
        report.unchecked++;
        continue;
      }
      const m: InboundMismatch = {
        tenant: s.tenant,
        payer: s.payer,
        payTo: s.payTo,
        row: s.row,
        transaction: s.transaction,
        priceUsd: atomicToUsd(BigInt(s.priceMicroUsd)),
        at: new Date(s.at).toISOString(),
        verdict,
      };
      report.mismatches.push(m);
      if (await kv.setIfAbsent(`sales:inbound:alerted:${s.transaction}:${s.tenant}`, this.services.instanceId, YEAR_MS)) {
        this.services.logger.error("a sale's payment is not on chain", { tenant: s.tenant, transaction: s.transaction, verdict });
        raiseAlert(this.services, {
          id: `sales.inbound_mismatch:${s.tenant}:${s.transaction}`,
          type: "sales.inbound_mismatch",
          data: { ...m },
          summary: `wallet tenant ${s.tenant}: the sale of ${s.row} for $${m.priceUsd} (transaction ${s.transaction}) is ${verdict} on chain`,
        });
      }
    }
    this.services.metrics.salesInboundMismatches(report.mismatches.length);
    this.last = report;
    await kv.set(LAST_KEY, JSON.stringify(report), YEAR_MS);
    return report;
  }

  /** The fleet's last pass (any instance's), for the admin API. */
  async lastAnywhere(): Promise<InboundCheck | undefined> {
    const raw = await this.services.stores.kv.get(LAST_KEY);
    return raw ? (JSON.parse(raw) as InboundCheck) : this.last;
  }
}

const confirmedKey = (s: SaleRecord) => `sales:inbound:matched:${s.tenant}:${s.transaction}`;
