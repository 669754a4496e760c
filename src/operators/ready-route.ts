// GET /_tollgate/ready: 200 ready or degraded (payments at risk), 503 not_ready, each check with its figures.
// /_tollgate/health (./own.ts) stays the cheap liveness check that touches nothing. The wallet's balances and floor
// are shown only to an operator key (admin or operator-readonly); anyone else sees whether the check passed.
import { Hono } from "hono";
import type { GatewayEnv } from "../context.js";
import type { Readiness, ReadinessReport } from "./readiness.js";
import type { GatewayServices } from "../services.js";
import { presentedKey, type Tenant } from "../../middleware/identify/tenants.js";
import { isOperator } from "./roles.js";
import { lastCreditDrift } from "../payments/credit-drift.js";

/** The tenant whose key the probe presents, if any (a wrong key is no reason to refuse a probe: it gets the public view). */
async function asking(services: GatewayServices, headers: Headers): Promise<Tenant | undefined> {
  const key = presentedKey(headers);
  if (!key) return undefined;
  try {
    return await services.directory.authenticate(key);
  } catch {
    return undefined;
  }
}

/** The report without money figures: the wallet check says only ok (and, when not ok, that it is not). */
function publicView(report: ReadinessReport): ReadinessReport {
  const { ok, skipped } = report.checks.wallet;
  const wallet = {
    ok,
    ...(skipped !== undefined ? { skipped } : {}),
    ...(ok ? {} : { error: "the wallet check failed (details for operators)" }),
  };
  return { ...report, checks: { ...report.checks, wallet } };
}

export function readyRoutes(readiness: Readiness, services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.get("/ready", async (c) => {
    const report = await readiness.check();
    const tenant = await asking(services, c.req.raw.headers);
    // Operators see the wallet's figures; admins also the credit drift (the books against the team's bill).
    const shown = tenant && isOperator(tenant) ? report : publicView(report);
    const extras = tenant?.scopes.includes("admin") ? { credits: { drift: (await lastCreditDrift(services)) ?? null } } : {};
    return c.json({ ...shown, ...extras }, report.status === "not_ready" ? 503 : 200, { "cache-control": "no-store" });
  });
  return app;
}
