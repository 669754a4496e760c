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

/** Origins that parsed (bounded: Hosts are the client's to choose). A URL's validity is its origin's: a path and query
 * are escaped, never refused. */
const goodOrigins = new Set<string>();
const MAX_GOOD_ORIGINS = 1024;

/** Whether `origin` (`http://host[:port]`) makes a URL, parsed once per origin; the Node entry's Host gate asks it too. */
export function originParses(origin: string): boolean {
  if (goodOrigins.has(origin)) return true;
  try {
    new URL(`${origin}/`);
  } catch {
    return false;
  }
  if (goodOrigins.size >= MAX_GOOD_ORIGINS) goodOrigins.clear();
  goodOrigins.add(origin);
  return true;
}

/**
 * Refuses (400 `invalid_host`) a request whose URL cannot be parsed, as requestUrl does, without a URL object: its
 * origin (scheme and Host) is checked once (originParses).
 */
export function checkRequestUrl(c: Context): void {
  const url = c.req.url;
  const hostStart = url.indexOf("://") + 3;
  const pathStart = hostStart < 3 ? -1 : url.indexOf("/", hostStart);
  if (pathStart < 0) requestUrl(c);
  else if (!originParses(url.slice(0, pathStart))) throw invalidHost();
}

/** Splits an absolute request URL string into origin, path and query without a URL parser (which may throw). */
export function splitRequestUrl(url: string): { origin: string; path: string; query: string } {
  const schemeEnd = url.indexOf("://");
  const hostStart = schemeEnd < 0 ? 0 : schemeEnd + 3;
  let pathStart = url.indexOf("/", hostStart);
  const q = url.indexOf("?", hostStart);
  if (pathStart < 0 || (q >= 0 && q < pathStart)) pathStart = q >= 0 ? q : url.length;
  const queryStart = q >= 0 ? q : url.length;
  return { origin: url.slice(0, pathStart), path: url.slice(pathStart, queryStart) || "/", query: url.slice(queryStart) };
}
