// Puts the client's address in the access log: the peer, or through trusted proxies the nearest untrusted X-Forwarded-For hop.
import type { MiddlewareHandler } from "hono";
import { clientView } from "../../src/forwarded.js";
import type { GatewayServices } from "../../src/services.js";

/**
 * Logs `client` for every request. X-Forwarded-For counts only when the peer is in `server.trustedProxies`, so a
 * client cannot write another address into the log; on Workers (no peer address) the field is left out.
 *
 * @example app.use(clientAddress(services))
 */
export function clientAddress(services: GatewayServices): MiddlewareHandler {
  return async function clientAddressMiddleware(c, next) {
    const address = clientView(c, services).address;
    if (address !== undefined) c.get("logFields").client = address;
    return next();
  };
}
