// GET /_tollgate/ready: 200 ready or degraded (payments at risk), 503 not_ready, each check with its figures.
// /_tollgate/health (./own.ts) stays the cheap liveness check that touches nothing.
import { Hono } from "hono";
import type { GatewayEnv } from "../context.js";
import type { Readiness } from "../readiness.js";
import type { GatewayServices } from "../services.js";
import { presentedKey } from "../tenants.js";
import { lastCreditDrift } from "../payments/credit-drift.js";

export function readyRoutes(readiness: Readiness, services?: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.get("/ready", async (c) => {
    const report = await readiness.check();
    return c.json({ ...report, ...(await adminExtras(c.req.raw.headers)) }, report.status === "not_ready" ? 503 : 200, {
      "cache-control": "no-store",
    });
  });
  /** An admin's probe also sees the credit drift; anyone else (or a key that fails) sees the plain report. */
  async function adminExtras(headers: Headers) {
    const key = presentedKey(headers);
    if (!services || !key) return {};
    try {
      const tenant = await services.directory.authenticate(key);
      if (!tenant.scopes.includes("admin")) return {};
      return { credits: { drift: (await lastCreditDrift(services)) ?? null } };
    } catch {
      return {};
    }
  }
  return app;
}
