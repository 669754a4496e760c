// Where clients reach the gateway: the configured public origin, else the origin of the request itself.
import type { Context } from "hono";
import type { GatewayServices } from "./services.js";

export function publicOriginOf(c: Context<any>, services: GatewayServices): string {
  return (services.config.server.publicOrigin ?? new URL(c.req.url).origin).replace(/\/+$/, "");
}
