// How the client reached the gateway (scheme, host, address), believing X-Forwarded-* only from trusted proxies.
import { forwardedClient } from "./client-address.js";
import type { Context } from "hono";
import { cidrMatcher } from "./cidr.js";
import { invalidHost, requestUrl } from "./request-url.js";

export interface ClientView {
  /** "https:" behind a TLS-terminating trusted proxy, else the scheme the gateway itself was called with. */
  protocol: "http:" | "https:";
  /** Host (with port unless the scheme's default), lower-cased: X-Forwarded-Host from a trusted proxy, else Host. */
  host: string;
  /** The client's address: the nearest untrusted hop of X-Forwarded-For, else the peer (undefined on Workers). */
  address?: string;
}

/**
 * What reading the client's view needs: the trusted proxies (config) and the runtime's peer address. Named by shape,
 * so this seam imports nothing above it; the gateway's services fit it.
 */
export interface ForwardedServices {
  readonly config: {
    readonly server: {
      readonly trustedProxies: readonly string[];
      /** Read by public-origin.ts: the fixed origin, and the hosts allowed to build URLs without one. */
      readonly publicOrigin?: string | undefined;
      readonly publicHosts?: readonly string[] | undefined;
    };
  };
  readonly peerAddress?: ((c: Context) => string | undefined) | undefined;
  /** Whether a peer is one of `server.trustedProxies` (createGateway builds it once: services.trustedProxy). */
  readonly trustedProxy: (address: string | undefined) => boolean;
}

const views = new WeakMap<Request, ClientView>();

/** Whether an address is one of `server.trustedProxies` (createGateway builds it once: services.trustedProxy). */
export function trustedProxyMatcher(trustedProxies: readonly string[]): (address: string | undefined) => boolean {
  return cidrMatcher(trustedProxies);
}

/** The first value of a header a chain of proxies may have appended to (`https, http`): the one nearest the client. */
function firstValue(h: string | undefined): string | undefined {
  const v = h?.split(",")[0]?.trim();
  return v || undefined;
}

/** A host as the client named it, normalised by the URL parser; anything that is not a bare host is refused. */
function normaliseHost(raw: string, protocol: string): string {
  let u: URL;
  try {
    u = new URL(`${protocol}//${raw}`);
  } catch {
    throw invalidHost();
  }
  if (u.username || u.password || u.pathname !== "/" || u.search || u.hash || /[/?#@\\\s]/.test(raw)) throw invalidHost();
  return u.host.toLowerCase();
}

/**
 * What the client saw. The peer (the TCP connection's address, given by the runtime's adapter) decides: only a peer in
 * `server.trustedProxies` may say, in X-Forwarded-Proto/Host/For, that the client used TLS, which host it called, and
 * from where. Anyone else's forwarded headers are ignored, so a client cannot make the gateway hand out its host.
 */
export function clientView(c: Context, services: ForwardedServices): ClientView {
  const known = views.get(c.req.raw);
  if (known) return known;
  const url = requestUrl(c);
  const isTrusted = services.trustedProxy;
  const peer = services.peerAddress?.(c);
  let view: ClientView = { protocol: url.protocol === "https:" ? "https:" : "http:", host: url.host.toLowerCase(), address: peer };
  if (peer !== undefined && isTrusted(peer)) {
    const proto = firstValue(c.req.header("x-forwarded-proto"))?.toLowerCase();
    const protocol = proto === "https" || proto === "wss" ? "https:" : proto === "http" || proto === "ws" ? "http:" : view.protocol;
    const fwdHost = firstValue(c.req.header("x-forwarded-host"));
    const host = fwdHost ? normaliseHost(fwdHost, protocol) : normaliseHost(url.host, protocol);
    // X-Forwarded-For lists client, proxy1, proxy2…; the client is the right-most hop that is not one of ours.
    view = { protocol, host, address: forwardedClient(peer, c.req.header("x-forwarded-for"), isTrusted) };
  }
  views.set(c.req.raw, view);
  return view;
}

/** The client's address as the access log reads it (after trusted proxies). */
export function clientAddressOf(services: ForwardedServices): (c: Context) => string | undefined {
  // Without trusted proxies (read on each call) the address is the peer's: no URL and no view to build for the log line.
  return (c) => (services.config.server.trustedProxies.length === 0 ? services.peerAddress?.(c) : clientView(c, services).address);
}
