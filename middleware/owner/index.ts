// The chain's owner step: the resource a row's path names must be the caller's; another tenant's id (or an id nobody here
// created) answers exactly like a missing one (404), whichever credential asked.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import type { GatewayServices } from "../../src/services.js";

/** The owner step reads the ownership registry (src/state/types.ts), nothing else. */
type OwnerServices = Pick<GatewayServices, "stores">;
import { ownedVolumeKey } from "../../src/sandboxes/volume-names.js";
import type { RouteRow } from "../../src/routing/table.js";
import { notOwned } from "../body-check/index.js";

/**
 * Another tenant's id (or an id nobody here created) answers exactly like a missing one. On the runtime plane (the hot
 * path) a sandbox token bound to the sandbox was minted for its owner and is trusted without a lookup.
 */
export function requireOwner(services: OwnerServices, row: RouteRow): MiddlewareHandler<GatewayEnv> | undefined {
  const owns = row.owns;
  if (!owns) return undefined;
  const boundTokenSuffices = row.auth.length === 1 && row.auth[0] === "sandbox-token";
  return async function requireOwnerMiddleware(c, next) {
    const id = c.req.param(owns.param) ?? "";
    const caller = c.get("caller");
    if (caller.via !== "key" && caller.via !== "token") throw notOwned(owns.kind, id);
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
