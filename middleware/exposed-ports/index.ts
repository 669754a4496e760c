// The app-level step for exposed ports: a request whose Host (the URL's host) or, behind trusted proxies,
// X-Forwarded-Host is shaped `<port>-<id>.<host>` goes to the sandbox port relay it is given (src/sandboxes/ports.ts),
// which checks that the host is exactly one the gateway handed out; any other request goes on at the cost of a regex.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";

/** What parseExposedHost (src/sandboxes/rewrite.ts) could accept: a first label of `<digits>-<id>`. */
const PORT_SHAPED = /^\s*\d{1,5}-[^.,\s]+\./;
/** The same, as the host of an absolute URL (no substring made per request). */
const PORT_SHAPED_URL = /^[a-z][a-z0-9+.-]*:\/\/\d{1,5}-[^.,\s/]+\./i;

/**
 * `forwardedHosts`: the gateway has trusted proxies (server.trustedProxies), so X-Forwarded-Host may name the host;
 * without them the relay would not believe it, and it is not read.
 * @example app.use(portHosts(exposedPorts(services), config.server.trustedProxies.length > 0))
 */
export function portHosts(relay: MiddlewareHandler<GatewayEnv>, forwardedHosts: boolean): MiddlewareHandler<GatewayEnv> {
  return function portHostsStep(c, next) {
    if (PORT_SHAPED_URL.test(c.req.url)) return relay(c, next);
    if (forwardedHosts) {
      const forwarded = c.req.header("x-forwarded-host");
      if (forwarded && PORT_SHAPED.test(forwarded)) return relay(c, next);
    }
    return next();
  };
}
