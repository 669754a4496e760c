// CORS for browser front-ends on `server.cors.origins`: preflights answered before any credential check, others untouched.
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { parseExposedHost } from "../../src/sandboxes/rewrite.js";
import { isWebSocketUpgrade } from "../../src/web/websocket.js";

export interface GatewayCorsOptions {
  /** Origins (scheme://host[:port]) allowed to call the gateway from a browser. Empty: CORS stays off. */
  origins: readonly string[];
  maxAgeSeconds: number;
}

/**
 * Answers a preflight (OPTIONS with Access-Control-Request-Method) from a configured origin at once, with no key or
 * token asked for: browsers never send credentials on a preflight. Requests from configured origins get
 * Access-Control-Allow-Origin on every answer, errors included, so a front-end can read `{message, code}`. Nothing is
 * granted to any other origin, cookies are never allowed (credentials stay off: browser clients send a keyless token
 * in Authorization), and exposed-port hosts are left to the app behind the port.
 *
 * @example app.use(gatewayCors({ origins: ["https://app.example.com"], maxAgeSeconds: 600 }))
 */
export function gatewayCors(opts: GatewayCorsOptions): MiddlewareHandler {
  const origins = new Set(opts.origins.map((o) => new URL(o).origin));
  const allow = cors({
    origin: (origin) => (origins.has(origin) ? origin : null),
    allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    // www-authenticate: a browser MCP host reads the 401 challenge (protected resource metadata, scope, error).
    exposeHeaders: ["x-request-id", "retry-after", "payment-required", "payment-response", "www-authenticate"],
    maxAge: opts.maxAgeSeconds,
    credentials: false,
  });
  return async function gatewayCorsMiddleware(c, next) {
    const origin = c.req.header("origin");
    if (!origin || !origins.has(origin) || isWebSocketUpgrade(c.req.raw) || parseExposedHost(c.req.header("host"))) return next();
    return allow(c, next);
  };
}
