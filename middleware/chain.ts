// Mounts the route table (src/routing/table.ts) on the app. One line per step, in the order every row runs them:
//   identify → scope (in identify) → rate limit → owner → body → quota → meter → handler.
// A request that matches no row is answered 404 route_not_fronted; nothing reaches the upstream without a row.
import type { Hono, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../src/context.js";
import { GatewayError } from "../src/errors.js";
import type { GatewayServices } from "../src/services.js";
import { quota } from "./quota/index.js";
import { rateLimit } from "./rate-limit/index.js";
import { identify } from "./identify/index.js";
import { limitBody } from "./body-limit/index.js";
import { checkBody } from "./body-check/index.js";
import { requireOwner } from "./owner/index.js";
import { refuseMethodOverride } from "./method-override/index.js";
import { meterCredits } from "./meter/index.js";
import { placeCreation } from "./placement/index.js";
import { series } from "./series/index.js";
import type { Handlers, RowHandler } from "../src/routing/handlers.js";
import { methodsOf, ROUTES, type RouteRow } from "../src/routing/table.js";
import { tracedStep, type Tracer } from "../src/telemetry/tracing.js";

export function mountRouteTable(
  app: Hono<GatewayEnv>,
  services: GatewayServices,
  handlers: Handlers,
  rows: readonly RouteRow[] = ROUTES,
): void {
  const limited = rateLimit(services);
  for (const row of rows) {
    const handler = handlers[row.handler];
    if (!handler) throw new Error(`route table: row ${row.name} names handler "${row.handler}", which does not exist`);
    const chain: MiddlewareHandler<GatewayEnv>[] = [refuseMethodOverride, identify(services, row)];
    // The steps that work after next() (the rest return it; the rate limit names its headers before, see
    // middleware/request-id): each closes a series of Hono's chain (shared()).
    const after = new Set<MiddlewareHandler<GatewayEnv>>();
    if (row.bodyLimit) chain.push(limitBody(row.bodyLimit, services.platform));
    // The row says whether the tenant's rate limit applies (the runtime plane's do not: bounded by their sandbox).
    if (row.rateLimited !== false) chain.push(limited);
    const owner = requireOwner(services, row);
    if (owner) chain.push(owner);
    const body = checkBody(services, row);
    if (body) chain.push(body);
    const placement = placeCreation(services, row);
    if (placement) chain.push(placement);
    if (row.quota) {
      const counted = quota(services, row.quota);
      chain.push(counted);
      after.add(counted);
    }
    const meter = meterCredits(services, row);
    if (meter) {
      chain.push(meter);
      after.add(meter);
    }
    const tracer = services.tracer;
    if (!tracer) app.on(methodsOf(row), [row.path], ...shared(chain, after), (c) => handler(c, row));
    else app.on(methodsOf(row), [row.path], ...tracedChain(tracer, chain, row, handler));
  }
}

/**
 * The row's steps as few steps of Hono's chain (middleware/series): a series ends at each step that works after
 * next(). A runtime row's four steps run as one.
 */
function shared(chain: MiddlewareHandler<GatewayEnv>[], after: Set<MiddlewareHandler<GatewayEnv>>): MiddlewareHandler<GatewayEnv>[] {
  const out: MiddlewareHandler<GatewayEnv>[] = [];
  let run: MiddlewareHandler<GatewayEnv>[] = [];
  for (const step of chain) {
    run.push(step);
    if (after.has(step)) {
      out.push(series(run));
      run = [];
    }
  }
  if (run.length) out.push(series(run));
  return out;
}

/** Traced (when configured): one span per step, named after it, the handler's included. */
function tracedChain(tracer: Tracer, chain: MiddlewareHandler<GatewayEnv>[], row: RouteRow, handler: RowHandler) {
  const run: MiddlewareHandler<GatewayEnv> = async (c) => handler(c, row);
  Object.defineProperty(run, "name", { value: `handler.${row.handler}` });
  return [...chain, run].map((step) => tracedStep(tracer, step.name || "step", step));
}

/** The refusal for a request no row matches: names the method and the (normalised) path. */
export function routeNotFronted(method: string, path: string): GatewayError {
  return new GatewayError(
    404,
    "route_not_fronted",
    `Tollgate does not front ${method} ${path}. See docs/routes.md (or "tollgate routes") for what it fronts.`,
    { method, path },
  );
}
