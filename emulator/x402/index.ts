// The paid half of the emulator: /x402/web/search, /x402/web/fetch and /x402/session, settled on the local chain.
import { Hono } from "hono";
import type { ChainHandle, EmulatorContext, EmulatorModule, SessionService } from "../types.js";
import { SearchEngine, createWebRoutes, parseFetch, parseSearch, readJsonBody, runFetchJob, runSearchJob } from "../search/index.js";
import { createLocalFacilitator } from "./facilitator.js";
import { facilitatorRoutes, type FacilitatorSwitches } from "./facilitator-http.js";
import { Paywall } from "./paywall.js";
import { resolvePrices, type X402Prices } from "./prices.js";
import { createSessionRoutes } from "./session-routes.js";
import { resolveDemand, type X402Demand } from "./schemes.js";

export type { X402Prices, AtomicAmount, PriceList } from "./prices.js";
export { DEFAULT_PRICES, resolvePrices } from "./prices.js";
export { V1_ONLY_HEADER } from "./paywall.js";
export { x402SessionParams } from "./session-routes.js";
export type { X402Demand, X402SchemeMode } from "./schemes.js";
export { FACILITATOR_PATH, type FacilitatorSwitches } from "./facilitator-http.js";

export interface X402ModuleOptions {
  chain: ChainHandle;
  sessions: SessionService;
  prices?: Partial<X402Prices>;
  /** Lifetime the client's authorization must have (`maxTimeoutSeconds`); default 120. */
  maxTimeoutSeconds?: number;
  /** Share one index between modules or tests; built from the default corpus otherwise. */
  searchEngine?: SearchEngine;
  /** The scheme each paid route demands, what `upto` settles, `settlement_pending`, lost answers (./schemes.ts). */
  demand?: Partial<X402Demand>;
}

/**
 * Builds the x402 module. It also mounts the free API-key routes `/api/web/search` and `/api/web/fetch`, which
 * share the search engine.
 */
export async function createX402Module(
  ctx: EmulatorContext,
  opts: X402ModuleOptions,
): Promise<
  EmulatorModule & {
    engine: SearchEngine;
    prices: ReturnType<typeof resolvePrices>;
    demand: X402Demand;
    facilitatorSwitches: FacilitatorSwitches;
  }
> {
  const prices = resolvePrices(opts.prices);
  const engine = opts.searchEngine ?? new SearchEngine();
  const demand = resolveDemand(opts.demand);
  const local = await createLocalFacilitator(opts.chain, () => demand.settlementPending);
  const paywall = new Paywall({ ctx, chain: opts.chain, local, maxTimeoutSeconds: opts.maxTimeoutSeconds ?? 120, demand });

  const control = new Hono();
  control.route("/", createWebRoutes(ctx, engine));
  // The facilitator over HTTP, for a seller in front of the emulator (./facilitator-http.ts).
  const facilitatorSwitches: FacilitatorSwitches = { failSettle: false };
  control.route("/", facilitatorRoutes(local, facilitatorSwitches));

  // Each paid route validates its body first: a bad request gets 400 and never reaches the payment step.
  control.post("/x402/web/search", async (c) => {
    const body = await readJsonBody(c.req.raw);
    if (!body.ok) return c.json({ message: body.message, code: "invalid_json" }, 400);
    const params = parseSearch(body.value);
    if (!params.ok) return c.json({ message: params.message, code: "invalid_request" }, 400);
    return paywall.charge(c, {
      amount: prices.search(params.value),
      description: params.value.location ? "Web search with location" : "Web search",
      run: async () => {
        const job = runSearchJob(engine, params.value);
        return { status: job.httpStatus, body: job.body, charge: job.delivered };
      },
    });
  });

  control.post("/x402/web/fetch", async (c) => {
    const body = await readJsonBody(c.req.raw);
    if (!body.ok) return c.json({ message: body.message, code: "invalid_json" }, 400);
    const params = parseFetch(body.value);
    if (!params.ok) return c.json({ message: params.message, code: "invalid_request" }, 400);
    return paywall.charge(c, {
      amount: prices.fetch(params.value),
      description: "Web fetch",
      run: async () => {
        const job = runFetchJob(engine, params.value);
        return { status: job.httpStatus, body: job.body, charge: job.delivered };
      },
    });
  });

  control.route("/", createSessionRoutes({ ctx, chain: opts.chain, sessions: opts.sessions, paywall, prices }));

  ctx.log("x402.ready", { network: opts.chain.network, asset: opts.chain.token.address, payTo: opts.chain.payee });
  return {
    name: "x402",
    control,
    engine,
    prices,
    demand,
    facilitatorSwitches,
    async close() {
      /* nothing long-lived: the chain belongs to whoever started it */
    },
  };
}
