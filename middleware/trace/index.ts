// Starts the request's span (server kind) from the client's `traceparent`, if any, and puts its trace id in the
// request's log line; mounted only when a tracer is configured. A tracer with no timer of its own (Workers) exports the
// request's spans beside it once it ends.
import type { Context, MiddlewareHandler } from "hono";
import type { Tracer } from "../../src/telemetry/tracing.js";

/**
 * @example if (tracer) app.use(traceRequests(tracer))
 */
export function traceRequests(
  tracer: Tracer,
  /** Runs the export beside the request (GatewayServices.background), for a tracer that `exportsPerRequest`. */
  background?: (c: Context, work: Promise<unknown>, what: string) => void,
): MiddlewareHandler {
  const exportAfter = tracer.exportsPerRequest ? background : undefined;
  return async function traceRequestsMiddleware(c, next) {
    const span = tracer.start(
      `${c.req.method} ${c.req.path.startsWith("/_tollgate") ? "/_tollgate" : "request"}`,
      c.req.header("traceparent"),
      {
        "http.request.method": c.req.method,
      },
    );
    c.set("span", span);
    const fields = c.get("logFields");
    if (fields) fields.traceId = span.traceId;
    try {
      await next();
    } finally {
      const f = c.get("logFields");
      if (f?.route) span.setAttribute("http.route", String(f.route));
      const status = typeof f?.status === "number" ? f.status : c.res.status;
      span.setAttribute("http.response.status_code", status);
      span.end(status >= 500 ? `status ${status}` : undefined);
      exportAfter?.(c, tracer.flush(), "trace export");
    }
  };
}
