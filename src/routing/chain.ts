// Mounts the route table (./table.ts) on the app. One line per step, in the order every row runs them:
//   identify → scope (in identify) → rate limit → owner → body → quota → meter → handler.
// A request that matches no row is answered 404 route_not_fronted; nothing reaches the upstream without a row.
import type { Hono, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { quota } from "../../middleware/quota/index.js";
import { rateLimit } from "../../middleware/rate-limit/index.js";
import { identify } from "./caller.js";
import { ownedVolumeKey } from "../sandbox/volume-names.js";
import { limitBody } from "./body.js";
import { checkBody, notOwned } from "./check-body.js";
import { meterCredits } from "./credits.js";
import type { RowHandler } from "./handlers.js";
import { methodsOf, ROUTES, type RouteRow } from "./table.js";
import { tracedStep, type Tracer } from "../tracing.js";

/**
 * Another tenant's id (or an id nobody here created) answers exactly like a missing one. On the runtime plane (the hot
 * path) a sandbox token bound to the sandbox was minted for its owner and is trusted without a lookup.
 */
function requireOwner(services: GatewayServices, row: RouteRow): MiddlewareHandler<GatewayEnv> | undefined {
  const owns = row.owns;
  if (!owns) return undefined;
  const boundTokenSuffices = row.auth.length === 1 && row.auth[0] === "sandbox-token";
  return async function requireOwnerMiddleware(c, next) {
    const id = c.req.param(owns.param) ?? "";
    const caller = c.get("caller");
    if (caller.via === "ticket") throw notOwned(owns.kind, id);
    if (owns.byName) {
      const key = await ownedVolumeKey(services, caller.tenant.id, id);
      if (!key) throw notOwned(owns.kind, id);
      c.set("volumeKey", key);
    } else if (!(boundTokenSuffices && caller.via === "token" && caller.token.resource === id)) {
      if ((await services.stores.ownership.owner(owns.kind, id)) !== caller.tenant.id) throw notOwned(owns.kind, id);
    }
    return next();
  };
}

/**
 * `?_method=` asks some frameworks to read a request as another method: the gateway routes, checks and meters the
 * method on the wire, so a request asking for another is refused rather than forwarded (the headers that ask the same,
 * X-HTTP-Method-Override and its kin, are never forwarded: src/transport.ts).
 */
const refuseMethodOverride: MiddlewareHandler<GatewayEnv> = async function refuseMethodOverride(c, next) {
  const url = c.req.url;
  const q = url.indexOf("?");
  if (q >= 0 && new URLSearchParams(url.slice(q + 1)).has("_method"))
    throw new GatewayError(400, "method_override_refused", "?_method= is not accepted: send the request with the method you mean.", {
      field: "_method",
    });
  return next();
};

export function mountRouteTable(
  app: Hono<GatewayEnv>,
  services: GatewayServices,
  handlers: Record<string, RowHandler>,
  rows: readonly RouteRow[] = ROUTES,
): void {
  const limited = rateLimit(services);
  for (const row of rows) {
    const handler = handlers[row.handler];
    if (!handler) throw new Error(`route table: row ${row.name} names handler "${row.handler}", which does not exist`);
    const chain: MiddlewareHandler<GatewayEnv>[] = [refuseMethodOverride, identify(services, row)];
    if (row.bodyLimit) chain.push(limitBody(row.bodyLimit));
    // The runtime plane is the hot path and is bounded by its sandbox; tenant rate limits apply to the control plane.
    if (!row.path.startsWith("/sandbox/")) chain.push(limited);
    const owner = requireOwner(services, row);
    if (owner) chain.push(owner);
    const body = checkBody(services, row);
    if (body) chain.push(body);
    if (row.quota) chain.push(quota(services, row.quota));
    const meter = meterCredits(services, row);
    if (meter) chain.push(meter);
    const tracer = services.tracer;
    if (!tracer) app.on(methodsOf(row), [row.path], ...chain, (c) => handler(c, row));
    else app.on(methodsOf(row), [row.path], ...tracedChain(tracer, chain, row, handler));
  }
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
    `Tollgate does not front ${method} ${path}. See the route table in the README for what it does.`,
    { method, path },
  );
}
