// The sales book's HTTP face for operators: GET /_tollgate/admin/sales. Per buyer (a wallet tenant): what it paid the
// gateway (inbound, the book), what the gateway paid the upstream for it (outbound, the ledger's committed entries, on
// chain or in credits) and the margin; and each sale, optionally checked against the chain (the settlement's
// transaction must carry the ERC-20 Transfer of the amount from the payer to the payee).
import { createClient, erc20Abi, http, parseEventLogs } from "viem";
import { getTransactionReceipt } from "viem/actions";
import type { GatewayServices } from "../services.js";
import type { Handlers } from "../routing/handlers.js";
import { salesQuery } from "../routing/admin-schemas.js";
import { GatewayError } from "../errors.js";
import { atomicToUsd } from "../payments/index.js";
import type { SaleRecord } from "./book.js";
import { ROUTES } from "../routing/table.js";
import { publicOriginOf } from "../web/public-origin.js";
import { SOLD_ROWS } from "./classes.js";
import { bazaarExtension, offerFor } from "./offer.js";
import { JOB_ROWS, jobMaxCost } from "./job-offer.js";
import { buyerSummaries } from "./buyers.js";

type ChainCheck = "matched" | "missing" | "mismatch" | "no_rpc";

/** Whether the sale's transaction carries its transfer on chain (through payments.rpc for its network). */
export async function checkOnChain(services: GatewayServices, sale: SaleRecord): Promise<ChainCheck> {
  const rpc = services.config.payments.rpc[sale.network];
  if (!rpc) return "no_rpc";
  // A bare client and the one action, as the payer's Permit2 reads do: the public client is a stand-in on Workers.
  const client = createClient({ transport: http(rpc, { retryCount: 0 }) });
  let receipt: Awaited<ReturnType<typeof getTransactionReceipt>>;
  try {
    receipt = await getTransactionReceipt(client, { hash: sale.transaction as `0x${string}` });
  } catch {
    return "missing";
  }
  if (receipt.status !== "success") return "mismatch";
  const transfers = parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: "Transfer" });
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  return transfers.some(
    (t) =>
      same(t.address, sale.asset) && same(t.args.from, sale.payer) && same(t.args.to, sale.payTo) && t.args.value === BigInt(sale.amount),
  )
    ? "matched"
    : "mismatch";
}

export function salesHandlers(services: GatewayServices): Handlers {
  return {
    // What is sold, for catalogs and agents: the Bazaar's discovery list (x402 v2 Bazaar, `GET /discovery/resources`:
    // `{x402Version, items: [{resource, type, x402Version, accepts, lastUpdated, metadata}]}`), served by the seller
    // itself at a well-known path.
    "own.x402.discovery": async (c) => {
      const sold = services.sales;
      const sales = services.config.sales;
      if (!sold || !sales) return c.json({ x402Version: 2, items: [] });
      const origin = publicOriginOf(c, services);
      // The `upto` offers of what is sold by time name the facilitator (asked once, as the 402s do).
      const upto = Object.values(sales.prices).some((p) => p?.scheme === "upto") || sold.jobs ? await sold.upto.byNetwork() : {};
      const items = ROUTES.filter((r) => sold.rows.includes(r.name)).map((r) => {
        const cls = SOLD_ROWS[r.name]!;
        // A job's maximum as its request asks: listed for the row's defaults (an empty body).
        const job = JOB_ROWS.get(r.name);
        const jobCost = job ? jobMaxCost(services.config, job, {}) : 0n;
        const offer = offerFor(services.config, sales, cls, `${origin}${r.path}`, sold.payTo, upto, jobCost);
        return {
          resource: offer.resource.url,
          type: "http",
          x402Version: 2,
          accepts: offer.v2,
          lastUpdated: Math.floor(services.now() / 1000),
          metadata: {
            description: offer.resource.description,
            class: cls,
            priceUsd: atomicToUsd(offer.priceMicroUsd),
            bazaar: bazaarExtension(cls).info,
          },
        };
      });
      return c.json({ x402Version: 2, items });
    },
    "admin.sales": async (c) => {
      const q = salesQuery.safeParse(c.req.query());
      if (!q.success) throw new GatewayError(400, "invalid_query", "expected tenant (a wallet tenant's id) and check=chain at most");
      const book = services.sales?.book;
      if (!book) return c.json({ enabled: false, buyers: [], sales: [] });
      const sales = await book.list(q.data.tenant);
      const checks = q.data.check === "chain" ? await Promise.all(sales.map((s) => checkOnChain(services, s))) : undefined;
      // The admin API's figures per buyer (the console's page adds the last purchase).
      const buyers = (await buyerSummaries(services, sales)).map(({ lastPurchase: _, ...b }) => b);
      return c.json({
        enabled: true,
        // The reconciler's last pass of the inbound books against the chain (./reconcile.ts).
        inbound: (await services.sales?.inbound.lastAnywhere()) ?? null,
        buyers,
        sales: sales.map((s, i) => ({
          ...s,
          at: new Date(s.at).toISOString(),
          priceUsd: atomicToUsd(BigInt(s.priceMicroUsd)),
          ...(checks ? { chain: checks[i] } : {}),
        })),
      });
    },
  };
}
