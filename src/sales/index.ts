// Tollgate sells (docs/sales.md): with [sales] configured, a client holding only a wallet buys a sold row's call with
// x402, and the gateway serves it as the wallet's own tenant, paying the upstream as it does for any tenant. The door of
// this folder: createGateway calls mountSales once, before the route table, and hangs the book on its services.
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { Hono } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import { methodsOf, ROUTES } from "../routing/table.js";
import { SOLD_ROWS } from "./classes.js";
import { SalesBook } from "./book.js";
import { InboundReconciler } from "./reconcile.js";
import { mcpStorefront, SOLD_TOOLS } from "./mcp.js";
import { sellStep } from "./sell.js";
import { WalletTenants } from "./wallet-tenants.js";
import { SiwxGate, siwxStep } from "./siwx.js";
import { offerFor } from "./offer.js";
import { publicOriginOf } from "../web/public-origin.js";
import { MeteredSales, meteredStopStep, STOP_ROWS, UptoFacilitators } from "./metered.js";
import { DueSweep, sweepBeside } from "./due.js";
import { JobSales, jobReadStep } from "./job-sales.js";

export { salesHandlers } from "./report.js";

export interface SalesMount {
  book: SalesBook;
  /** The rows sold, by name. */
  rows: string[];
  payTo: `0x${string}`;
  /** The inbound books against the chain, run by the reconciler's passes (./reconcile.ts). */
  inbound: InboundReconciler;
  /** The sales sold by time (`upto`) and not yet settled. */
  metered: MeteredSales;
  /**
   * What falls due at a time, swept by every instance (the reconciler's passes, and beside requests): time sales' window
   * ends; another sale settled at its end registers its own queue (./due.ts).
   */
  due: DueSweep;
  /** The `upto` facilitators' addresses per network (what a time offer names). */
  upto: UptoFacilitators;
  /** Jobs sold by the credits they use, pending until they end; `settleDue` is the sweep (the reconciler's pass runs it). */
  jobs?: JobSales;
}

/**
 * Mounts the sales step in front of each sold row (its class priced in [sales.prices]). `payTo` is [sales].payTo or
 * the gateway wallet's address; `secret` derives the wallet tenants' keys (the token secret). Nothing when [sales] is
 * absent or off.
 */
export function mountSales(
  app: Hono<GatewayEnv>,
  services: GatewayServices,
  opts: { walletAddress?: `0x${string}`; secret: string },
): SalesMount | undefined {
  const sales = services.config.sales;
  if (!sales?.enabled) return undefined;
  const payTo = (sales.payTo as `0x${string}` | undefined) ?? opts.walletAddress;
  if (!payTo)
    throw new Error(
      "sales.payTo: expected an address to be paid (no gateway wallet is configured: set TOLLGATE_WALLET_KEY or sales.payTo)",
    );
  const book = new SalesBook(services.stores.kv);
  const facilitator = new HTTPFacilitatorClient({ url: sales.facilitator.replace(/\/+$/, ""), timeoutMs: 30_000 });
  // Swept on the reconciler's interval: by its loop (Node), its cron (Workers), and beside requests (./due.ts).
  const due = new DueSweep(services, services.config.payments.reconcileIntervalSeconds * 1000);
  app.use(sweepBeside(due, services));
  const metered = new MeteredSales({ services, sales, facilitator, book, due });
  const upto = new UptoFacilitators(facilitator);
  const wallets = new WalletTenants(services, sales, opts.secret);
  const siwx = new SiwxGate(services, sales, wallets, opts.secret);
  // The gateway calling itself (a bought resource stopped when its sale could not be settled: ./unwind.ts; a sold
  // job's status followed until it ends: ./job-sales.ts).
  const self = (req: Request, env: unknown) => Promise.resolve(app.fetch(req, env));
  // Jobs are sold for the credits the meter bills them: only with credits on.
  const jobs =
    sales.prices.jobs && services.config.credits.enabled
      ? new JobSales({ services, price: sales.prices.jobs, facilitator, book, self })
      : undefined;
  const parts = {
    services,
    sales,
    payTo,
    facilitator,
    upto,
    metered,
    siwx,
    wallets,
    book,
    self,
    jobs,
  };
  const rows: string[] = [];
  for (const row of ROUTES) {
    const cls = SOLD_ROWS[row.name];
    if (!cls || !sales.prices[cls] || (cls === "jobs" && !jobs)) continue;
    app.on(methodsOf(row), [row.path], sellStep(parts, cls, row.name));
    rows.push(row.name);
  }
  // A sold job settles when a read of it (get, status) shows it ended.
  if (jobs)
    for (const row of ROUTES) {
      const start = row.name.replace(/\.(get|status)$/, ".start");
      if (start !== row.name && SOLD_ROWS[start] === "jobs") app.on(methodsOf(row), [row.path], jobReadStep(jobs));
    }
  // Over MCP (sales.mcp): keyless callers of /mcp are buyers of the sold tools (./mcp.ts); keyed ones go on to the row.
  if (sales.mcp && (Object.values(SOLD_TOOLS).some((cls) => sales.prices[cls]) || jobs)) {
    const pays = opts.walletAddress !== undefined || services.wallets?.any ? "x402" : "credits";
    app.on(["GET", "POST", "DELETE"], ["/mcp"], mcpStorefront(parts, pays));
  }
  // A session or sandbox sold by time (`upto`) settles when it is stopped through the gateway.
  const byTime = (["session", "sandbox"] as const).filter((k) => sales.prices[k]?.scheme === "upto");
  for (const row of ROUTES) {
    const kind = STOP_ROWS[row.name];
    if (kind && byTime.includes(kind)) app.on(methodsOf(row), [row.path], meteredStopStep(metered, kind));
  }
  // What was bought is reached again with sign-in-with-x: the free rows that read, list or stop a sold kind.
  for (const row of ROUTES) {
    const kind = row.owns?.kind ?? row.list?.kind;
    if ((kind !== "sandbox" && kind !== "session") || !sales.prices[kind] || row.pay !== "free") continue;
    if (!(Array.isArray(row.auth) && row.auth.length === 1 && row.auth[0] === "key")) continue;
    const offerOf = async (c: Parameters<Parameters<typeof siwxStep>[1]>[0]) =>
      offerFor(services.config, sales, kind, `${publicOriginOf(c, services)}${new URL(c.req.url).pathname}`, payTo);
    app.on(methodsOf(row), [row.path], siwxStep(siwx, offerOf));
  }
  return { book, rows, payTo, inbound: new InboundReconciler(services, book), metered, upto, due, jobs };
}
