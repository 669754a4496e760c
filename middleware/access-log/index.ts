// Writes one structured line per request: tenant, route, status, duration, paid amount. Secrets never reach it.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import type { Logger } from "../../src/log.js";

/**
 * @example app.use(accessLog(logger))
 */
export function accessLog(logger: Logger, now: () => number = () => performance.now()): MiddlewareHandler<GatewayEnv> {
  return async function accessLogMiddleware(c, next) {
    // Nothing to build when the level drops request lines (the object would be made and thrown away).
    if (!logger.enabled("info")) return next();
    const start = now();
    try {
      await next();
    } finally {
      const f = c.get("logFields") ?? {};
      logger.info("request", {
        requestId: c.get("requestId"),
        method: c.req.method,
        // c.req.path, not new URL(): a Host that is no valid URL host (`3000-sbx.127.0.0.1`) must not crash the log.
        path: c.req.path,
        ...f,
        tenant: f.tenant ?? c.get("tenant")?.id,
        // A response the Node fast path wrote itself records its status here (c.res is only a marker then).
        status: typeof f.status === "number" ? f.status : c.res.status,
        durationMs: Math.round((now() - start) * 10) / 10,
        paid: f.paid !== undefined ? f.paid.toString() : undefined,
      });
    }
  };
}
