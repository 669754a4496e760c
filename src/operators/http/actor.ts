// The actor of an operator action (../actions/actor.ts), read off the request: the caller the chain identified.
import type { Context } from "hono";
import type { GatewayEnv } from "../../context.js";
import type { Actor } from "../actions/actor.js";

/** The caller's tenant (and the person behind it, signed in through a provider) and the request's id. */
export function actorOf(c: Context<GatewayEnv>): Actor {
  return { tenant: c.get("tenant")?.id, person: c.get("actor"), requestId: c.get("requestId") };
}
