// GET /_tollgate/metrics: the Prometheus exposition, for an operator key (admin, operator-readonly) or the TOLLGATE_METRICS_TOKEN bearer.
import { Hono } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import { bearerToken, requireScope } from "../../middleware/identify/tenants.js";
import { isOperator } from "./roles.js";
import { authenticateTenant } from "../../middleware/authenticate/index.js";
import type { GatewayMetrics } from "../telemetry/gateway-metrics.js";

/** Equal strings in time that does not depend on where they differ. */
function sameSecret(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/** `token`: TOLLGATE_METRICS_TOKEN, handed to this route alone (undefined: only operator keys may scrape). */
export function metricsRoutes(services: GatewayServices, metrics: GatewayMetrics, token: string | undefined): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.get("/metrics", async (c) => {
    const bearer = bearerToken(c.req.raw.headers);
    if (!(token && bearer && sameSecret(bearer, token))) {
      const tenant = await authenticateTenant(c, services.directory);
      if (!isOperator(tenant)) requireScope(tenant, "admin"); // admin or operator-readonly
    }
    // Scrape-time gauges (budgets, held amounts) are read from the ledger now, so every instance reports the same.
    await metrics.collectLedger(services.stores, services.directory, services.now());
    return c.body(await metrics.render(), 200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" });
  });
  return app;
}
