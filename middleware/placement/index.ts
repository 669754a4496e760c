// The chain's placement step (with [[upstream.accounts]] only): a creating row's request is marked for placement, so its
// creation goes to one of the tenant's accounts by weight and headroom and spills to the next on a limit or a failure
// (src/upstream/upstream.ts, src/upstream/accounts.ts). A body naming a resource (a profile, a snapshot, a session)
// binds the creation to that resource's account (the body step noted it). Without accounts the row has no such step.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import type { GatewayServices } from "../../src/services.js";
import { callerTenant } from "../../src/identity/caller.js";
import type { RouteRow } from "../../src/routing/table.js";

export function placeCreation(services: Pick<GatewayServices, "upstream">, row: RouteRow): MiddlewareHandler<GatewayEnv> | undefined {
  const kind = row.creates;
  if (!kind || !services.upstream.accounts?.configured) return undefined;
  return function placementMiddleware(c, next) {
    c.set("placement", { kind, tenant: callerTenant(c), only: c.get("accountPin") });
    return next();
  };
}
