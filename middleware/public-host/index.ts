// Answers only to the gateway's public hosts when they are listed (server.publicHosts): any other Host is refused 421.
import type { MiddlewareHandler } from "hono";
import { GatewayError } from "../../src/errors.js";
import { clientView, type ForwardedServices } from "../../src/web/forwarded.js";
import { isListedPublicHost } from "../../src/web/public-origin.js";
import { parseExposedHost } from "../../src/sandboxes/rewrite.js";

const HEALTH_PATH = "/_tollgate/health";

const hostNotAllowed = () =>
  new GatewayError(
    421,
    "host_not_allowed",
    "This gateway answers only to its public host names (server.publicHosts); call it by one of them.",
  );

/**
 * Without a configured publicOrigin the gateway builds the URLs it hands out from the host the client called (through
 * trusted proxies, X-Forwarded-Host). With `server.publicHosts` listed, a request by any other host (or a port host
 * `<port>-<id>.<other>`) is refused before it reaches a route, so a spoofed Host can never end up in a URL, nor half a
 * request run first. The health check answers any host (load balancers call it by address). It reads the server config
 * (public hosts, trusted proxies) and the runtime's peer address, nothing else.
 *
 * @example app.use(publicHostsOnly(services))
 */
export function publicHostsOnly(services: ForwardedServices): MiddlewareHandler {
  const { publicOrigin, publicHosts } = services.config.server;
  // Without listed hosts (or with a fixed public origin) there is nothing to check: no step in the chain at all.
  if (publicOrigin || !publicHosts) return (_c, next) => next();
  return async function publicHostsMiddleware(c, next) {
    if (c.req.path === HEALTH_PATH) return next();
    const { host, protocol } = clientView(c, services);
    const port = parseExposedHost(host);
    if (!isListedPublicHost(host, publicHosts, protocol) && !(port && isListedPublicHost(port.rest, publicHosts, protocol)))
      throw hostNotAllowed();
    return next();
  };
}
