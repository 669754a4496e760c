// Gives every request an id: the client's `x-request-id` when it is sane, else a new one; echoed on the response.
// Sets `c.var.requestId` (the variable hono/request-id would set); the header is echoed here, after the handler, so a
// WebSocket upgrade's 101 (whose headers some runtimes freeze) is left alone. No async frame of its own: it is the first
// step of every request.
import type { Context, MiddlewareHandler } from "hono";
import { setResponseHeader } from "../../src/platform/response-headers.js";

declare module "hono" {
  interface ContextVariableMap {
    requestId: string;
    /** Headers for the request's answer, named before it exists (answerHeader). */
    answerHeaders: Record<string, string>;
  }
}

/**
 * Names a header for the request's answer, whichever answers it (the handler's, or an error's): set on it by this step,
 * after the rest of the chain. A step that knows its header before the answer (the rate limit's) then does nothing
 * after next(), and shares one step of Hono's chain with the steps after it (middleware/series).
 */
export function answerHeader(c: Context, name: string, value: string): void {
  const headers = c.get("answerHeaders");
  if (headers) headers[name] = value;
  else c.set("answerHeaders", { [name]: value });
}

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * @example app.use(requestId())  // c.get("requestId"), response header x-request-id
 */
export function requestId(): MiddlewareHandler {
  return function requestIdMiddleware(c, next) {
    const given = c.req.header("x-request-id");
    const id = given && SANE.test(given) ? given : crypto.randomUUID();
    c.set("requestId", id);
    return next().then(() => {
      const named = c.get("answerHeaders");
      if (named)
        try {
          for (const k in named) setResponseHeader(c.res, k, named[k]!);
        } catch {
          /* immutable response (a WebSocket upgrade on some runtimes) */
        }
      if (c.res.status === 101) return;
      try {
        setResponseHeader(c.res, "x-request-id", id);
      } catch {
        /* immutable response from a runtime adapter */
      }
    });
  };
}
