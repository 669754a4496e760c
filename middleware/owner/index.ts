// The chain's owner step: the resource a row's path names must be the caller's; another tenant's id (or an id nobody here
// created) answers exactly like a missing one (404), whichever credential asked.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import type { GatewayServices } from "../../src/services.js";

/** The owner step reads the ownership registry (src/state/types.ts), nothing else. */
type OwnerServices = Pick<GatewayServices, "stores">;
import { ownedVolumeKey } from "../../src/sandboxes/volume-names.js";
import type { RouteRow } from "../../src/routing/table.js";
import { notOwned } from "../../src/routing/not-owned.js";

/**
 * Another tenant's id (or an id nobody here created) answers exactly like a missing one. On the runtime plane (the hot
 * path) a sandbox token bound to the sandbox was minted for its owner and is trusted without a lookup.
 */
export function requireOwner(services: OwnerServices, row: RouteRow): MiddlewareHandler<GatewayEnv> | undefined {
  const owns = row.owns;
  if (!owns) return undefined;
  const boundTokenSuffices = row.auth.length === 1 && row.auth[0] === "sandbox-token";
  // Not an async function: a token bound to the resource in the path passes with no promise or turn of its own.
  return function requireOwnerMiddleware(c, next) {
    const id = c.req.param(owns.param) ?? "";
    const caller = c.get("caller");
    if (caller.via !== "key" && caller.via !== "token") throw notOwned(owns.kind, id);
    const tenant = caller.tenant.id;
    if (owns.byName) {
      return ownedVolumeKey(services, tenant, id).then((key) => {
        if (!key) throw notOwned(owns.kind, id);
        c.set("volumeKey", key);
        return next();
      });
    }
    if (boundTokenSuffices && caller.via === "token" && caller.token.resource === id) return next();
    return services.stores.ownership.owner(owns.kind, id).then((owner) => {
      if (owner !== tenant) throw notOwned(owns.kind, id);
      return next();
    });
  };
}
