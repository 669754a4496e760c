// GET /_tollgate/ready: 200 ready or degraded (payments at risk), 503 not_ready, each check with its figures.
// /_tollgate/health (./own.ts) stays the cheap liveness check that touches nothing. The wallet's balances and floor
// are shown only to an operator key (admin or operator-readonly); anyone else sees whether the check passed.
import { Hono } from "hono";
import type { GatewayEnv } from "../context.js";
import type { Readiness, ReadinessReport } from "../readiness.js";
import { presentedKey, type TenantDirectory } from "../tenants.js";
import { isOperator } from "../operators/roles.js";

async function operatorAsking(directory: TenantDirectory, headers: Headers): Promise<boolean> {
  const key = presentedKey(headers);
  if (!key) return false;
  try {
    return isOperator(await directory.authenticate(key));
  } catch {
    return false; // a wrong key is no reason to refuse a readiness probe: it gets the public view
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

export function readyRoutes(readiness: Readiness, directory: TenantDirectory): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.get("/ready", async (c) => {
    const report = await readiness.check();
    const shown = (await operatorAsking(directory, c.req.raw.headers)) ? report : publicView(report);
    return c.json(shown, report.status === "not_ready" ? 503 : 200, { "cache-control": "no-store" });
  });
  return app;
}
