// The request's URL, parsed once and never unguarded: a Host that makes no URL (`foo.123`, `xn--`) is the client's 400.
import type { Context } from "hono";
import { GatewayError } from "../errors.js";

const parsed = new WeakMap<Request, URL>();

export const invalidHost = () => new GatewayError(400, "invalid_host", "The Host header is not a valid host name.");

/**
 * The request URL as a URL object (shared per request: read it, do not change it). Runtimes build `c.req.url` from the
 * Host header without always checking it, so `new URL(c.req.url)` can throw; this answers 400 `invalid_host` instead.
 */
export function requestUrl(c: Context): URL {
  let url = parsed.get(c.req.raw);
  if (!url) {
    try {
      url = new URL(c.req.url);
    } catch {
      throw invalidHost();
    }
    parsed.set(c.req.raw, url);
  }
  return url;
}
