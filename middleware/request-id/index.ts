// Gives every request an id: the client's `x-request-id` when it is sane, else a new one; echoed on the response.
// hono/request-id sets (and declares) `c.var.requestId`; the header is echoed here, after the handler, so a WebSocket
// upgrade's 101 (whose headers some runtimes freeze) is left alone.
import type { MiddlewareHandler } from "hono";
import { requestId as honoRequestId } from "hono/request-id";

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * @example app.use(requestId())  // c.get("requestId"), response header x-request-id
 */
export function requestId(): MiddlewareHandler {
  const assign = honoRequestId({
    headerName: "", // read and echoed below: Hono's own check would refuse ids with `.` or `:`
    generator: (c) => {
      const given = c.req.header("x-request-id");
      return given && SANE.test(given) ? given : crypto.randomUUID();
    },
  });
  return async function requestIdMiddleware(c, next) {
    await assign(c, async () => {
      await next();
      if (c.res.status === 101) return;
      try {
        c.res.headers.set("x-request-id", c.var.requestId);
      } catch {
        /* immutable response from a runtime adapter */
      }
    });
  };
}
