// Per wallet buyer, for operators: what it paid the gateway (inbound, the sales book), what the gateway paid the
// upstream for it (outbound, the ledger's committed entries of its tenant, on chain or in credits), the margin, how many
// calls it bought and when it last bought. Read by GET /_tollgate/admin/sales, the console's Sales page and the usage
// export (./usage.ts).
import { atomicToUsd } from "../payments/index.js";
import type { GatewayServices } from "../services.js";
import { groupBy } from "../state/fan-out.js";
import type { SaleRecord } from "./book.js";

export interface BuyerSummary {
  tenant: string;
  payer: string;
  /** Sales (calls bought). */
  sales: number;
  inbound: string;
  outbound: string;
  /** inbound − outbound, signed. */
  margin: string;
  /** The last purchase, ISO. */
  lastPurchase: string;
}

export const signedUsd = (atomic: bigint) => (atomic < 0n ? `-${atomicToUsd(-atomic)}` : atomicToUsd(atomic));

/** Each buyer among `sales`, in the order first seen (`sales` oldest first). */
export async function buyerSummaries(services: GatewayServices, sales: SaleRecord[]): Promise<BuyerSummary[]> {
  const byTenant = groupBy(sales, (s) => s.tenant);
  return Promise.all(
    [...byTenant].map(async ([tenant, lines]) => {
      const inbound = lines.reduce((a, s) => a + BigInt(s.priceMicroUsd), 0n);
      const committed = await services.stores.ledger.list({ tenant, state: "committed" });
      const outbound = committed.reduce((a, e) => a + BigInt(e.amount), 0n);
      return {
        tenant,
        payer: lines[0]!.payer,
        sales: lines.length,
        inbound: atomicToUsd(inbound),
        outbound: atomicToUsd(outbound),
        margin: signedUsd(inbound - outbound),
        lastPurchase: new Date(Math.max(...lines.map((s) => s.at))).toISOString(),
      };
    }),
  );
}
