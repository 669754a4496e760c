// Gives every request an id: the client's `x-request-id` when it is sane, else a new one; echoed on the response.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * @example app.use(requestId())  // c.get("requestId"), response header x-request-id
 */
export function requestId(): MiddlewareHandler<GatewayEnv> {
  return async function requestIdMiddleware(c, next) {
    const given = c.req.header("x-request-id");
    const id = given && SANE.test(given) ? given : crypto.randomUUID();
    c.set("requestId", id);
    c.set("logFields", {});
    await next();
    // WebSocket upgrades (101) carry immutable headers on some runtimes.
    if (c.res.status !== 101) {
      try {
        c.res.headers.set("x-request-id", id);
      } catch {
        /* immutable response from a runtime adapter */
      }
    }
  };
}
