// GET /_tollgate/ready: 200 ready or degraded (payments at risk), 503 not_ready, each check with its figures.
// /_tollgate/health (./own.ts) stays the cheap liveness check that touches nothing.
import { Hono } from "hono";
import type { GatewayEnv } from "../context.js";
import type { Readiness } from "../readiness.js";

export function readyRoutes(readiness: Readiness): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.get("/ready", async (c) => {
    const report = await readiness.check();
    return c.json(report, report.status === "not_ready" ? 503 : 200, { "cache-control": "no-store" });
  });
  return app;
}
