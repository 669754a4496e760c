// The app-level step for exposed ports: a request whose Host (the URL's host) (or, from a trusted proxy, X-Forwarded-Host) is shaped
// `<port>-<id>.<host>` goes to the sandbox port relay it is given (src/sandboxes/ports.ts), which checks that the host
// is exactly one the gateway handed out; any other request goes on at the cost of two header reads.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";

/** What parseExposedHost (src/sandboxes/rewrite.ts) could accept: a first label of `<digits>-<id>`. */
const PORT_SHAPED = /^\s*\d{1,5}-[^.,\s]+\./;

/** @example app.use(portHosts(exposedPorts(services))) */
export function portHosts(relay: MiddlewareHandler<GatewayEnv>): MiddlewareHandler<GatewayEnv> {
  return function portHostsStep(c, next) {
    const url = c.req.url; // its host is the request's Host
    const host = url.slice(url.indexOf("//") + 2);
    const forwarded = c.req.header("x-forwarded-host");
    if (PORT_SHAPED.test(host) || (forwarded && PORT_SHAPED.test(forwarded))) return relay(c, next);
    return next();
  };
}
