// Writes one structured line per request: tenant, route, status, duration, paid amount. Secrets never reach it.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import type { Logger } from "../../src/log.js";

/**
 * @example app.use(accessLog(logger))
 */
export function accessLog(logger: Logger, now: () => number = () => performance.now()): MiddlewareHandler<GatewayEnv> {
  return async function accessLogMiddleware(c, next) {
    const start = now();
    try {
      await next();
    } finally {
      const f = c.get("logFields") ?? {};
      const url = new URL(c.req.url);
      logger.info("request", {
        requestId: c.get("requestId"),
        method: c.req.method,
        path: url.pathname,
        ...f,
        tenant: f.tenant ?? c.get("tenant")?.id,
        status: c.res.status,
        durationMs: Math.round((now() - start) * 10) / 10,
        paid: f.paid !== undefined ? f.paid.toString() : undefined,
      });
    }
  };
}
