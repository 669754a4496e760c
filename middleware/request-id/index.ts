// Gives every request an id: the client's `x-request-id` when it is sane, else a new one; echoed on the response.
// Sets `c.var.requestId` (the variable hono/request-id would set); the header is echoed here, after the handler, so a
// WebSocket upgrade's 101 (whose headers some runtimes freeze) is left alone. No async frame of its own: it is the first
// step of every request.
import type { MiddlewareHandler } from "hono";
import { setResponseHeader } from "../../src/web/response-headers.js";
import { webPlatform, type PlatformSpeed } from "../../src/web/speed.js";

declare module "hono" {
  interface ContextVariableMap {
    requestId: string;
  }
}

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * @example app.use(requestId())  // c.get("requestId"), response header x-request-id
 */
export function requestId(platform: PlatformSpeed = webPlatform): MiddlewareHandler {
  return function requestIdMiddleware(c, next) {
    const given = c.req.header("x-request-id");
    const id = given && SANE.test(given) ? given : crypto.randomUUID();
    c.set("requestId", id);
    return next().then(() => {
      const named = c.get("answerHeaders");
      if (named)
        try {
          for (const k in named) setResponseHeader(platform, c.res, k, named[k]!);
        } catch {
          /* immutable response (a WebSocket upgrade on some runtimes) */
        }
      if (c.res.status === 101) return;
      try {
        setResponseHeader(platform, c.res, "x-request-id", id);
      } catch {
        /* immutable response from a runtime adapter */
      }
    });
  };
}
