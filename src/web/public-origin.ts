// Where clients reach the gateway: the configured public origin, else the origin the client called (via trusted proxies).
import type { Context } from "hono";
import { GatewayError } from "../errors.js";
import { clientView, type ForwardedServices } from "./forwarded.js";

/** What `tollgate start` answers to when neither server.publicOrigin nor server.publicHosts is configured. */
export const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"] as const;

/**
 * Whether `host` (`name` or `name:port`, as the client sent it) is one of `server.publicHosts`. An entry without a port
 * allows any port; one with a port allows that port, the scheme's default included (`gw.example.com:443` matches an
 * https request to `gw.example.com`, whose URL carries no port).
 */
export function isListedPublicHost(host: string, listed: readonly string[], protocol = "http:"): boolean {
  const h = host.toLowerCase();
  const given = /:(\d+)$/.exec(h);
  const name = given ? h.slice(0, -given[0].length) : h;
  const port = given ? given[1] : protocol === "https:" || protocol === "wss:" ? "443" : "80";
  return listed.some((e) => {
    const entry = e.toLowerCase();
    const p = /:(\d+)$/.exec(entry);
    if (!p) return entry === name;
    return entry.slice(0, -p[0].length) === name && Number(p[1]) === Number(port);
  });
}

/**
 * The origin handed-out URLs are built on. With `server.publicOrigin` set it is that, whatever the Host says. Without,
 * it is the scheme and host the client used (X-Forwarded-* only from trusted proxies), and when `server.publicHosts`
 * lists hosts, any other host is refused (421) rather than echoed into URLs.
 */
export function publicOriginOf(c: Context, services: ForwardedServices): string {
  const { publicOrigin, publicHosts } = services.config.server;
  if (publicOrigin) return publicOrigin.replace(/\/+$/, "");
  const view = clientView(c, services);
  // publicHostsOnly() refuses such requests up front; this keeps a route mounted outside it from echoing the host.
  if (publicHosts && !isListedPublicHost(view.host, publicHosts, view.protocol)) {
    throw new GatewayError(
      421,
      "host_not_allowed",
      "This gateway answers only to its public host names (server.publicHosts); call it by one of them.",
    );
  }
  return `${view.protocol}//${view.host}`;
}
