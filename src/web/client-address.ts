// The client's address for logs and limits: the socket's peer, or, behind a trusted proxy, the X-Forwarded-For hop.
import type { Context } from "hono";

/** The address of the connection's other end, as the runtime knows it. */
export type PeerAddress = (c: Context) => string | undefined;

/**
 * Workers (chosen by the Worker entry, src/host/worker.ts): Cloudflare's edge sets `cf-connecting-ip` on every
 * request it hands the Worker, overwriting any a client sent. (A request from a service binding carries what the
 * operator's own calling Worker set.) It used to be read only when the request had a `cf` object; on workerd that getter
 * parses the request's `cf` properties on each read, ~7 % of the Worker's busy time on a relayed GET.
 */
export const workersPeerAddress: PeerAddress = (c) => c.req.header("cf-connecting-ip");

/** `::ffff:127.0.0.1` → `127.0.0.1`. */
function normaliseAddress(a: string): string {
  return a.startsWith("::ffff:") && a.includes(".") ? a.slice(7) : a;
}

/**
 * The client behind `peer`: the peer itself, or, when the peer is a trusted proxy, the right-most X-Forwarded-For hop
 * that is not itself a trusted proxy (the left-most when every hop is one). Addresses come back without `::ffff:`.
 */
export function forwardedClient(
  peer: string | undefined,
  xff: string | undefined,
  isTrustedProxy?: (address: string) => boolean,
): string | undefined {
  const p = peer ? normaliseAddress(peer) : undefined;
  if (!p || !isTrustedProxy?.(p) || !xff) return p;
  const hops = xff
    .split(",")
    .map((h) => normaliseAddress(h.trim()))
    .filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) if (!isTrustedProxy(hops[i]!)) return hops[i];
  return hops[0] ?? p;
}

/**
 * Resolves the client address of a request from its peer (see forwardedClient).
 * @example const clientOf = clientAddress(nodePeerAddress, (a) => cidrs.some((c) => c.contains(a)));
 */
export function clientAddress(peer: PeerAddress, isTrustedProxy?: (address: string) => boolean): (c: Context) => string | undefined {
  return (c) => forwardedClient(peer(c), c.req.header("x-forwarded-for"), isTrustedProxy);
}
