// Refuses, before any route runs, a request whose Host makes no valid URL: 400 invalid_host, never a 500 further on.
import type { MiddlewareHandler } from "hono";
import { checkRequestUrl } from "../../src/web/request-url.js";

/**
 * Checks the request URL parses (see checkRequestUrl: once per origin); a Host such as `foo.123`, `1.2.3.4.5` or `xn--` is answered
 * `400 {"code":"invalid_host"}` here, so no later `new URL(c.req.url)` can throw.
 *
 * @example app.use(validHost())
 */
export function validHost(): MiddlewareHandler {
  return function validHostMiddleware(c, next) {
    checkRequestUrl(c);
    return next();
  };
}
