// GET /_tollgate/ready: 200 ready or degraded (payments at risk), 503 not_ready, each check with its figures.
// /_tollgate/health (./own-routes.ts) stays the cheap liveness check that touches nothing. The wallet's balances and floor
// are shown only to an operator key (admin or operator-readonly); anyone else sees whether the check passed.
import type { Readiness, ReadinessReport } from "../actions/readiness.js";
import type { GatewayServices } from "../../services.js";
import { callerRights } from "../../identity/caller.js";
import { lastCreditDrift } from "../../payments/index.js";
import type { Handlers } from "../../routing/handlers.js";
import { configDrift, driftSummary } from "../actions/config-state.js";

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

/** The row is open ("public"): a tenant key the probe presents (identified by the chain) only widens the view. */
export function readyHandlers(readiness: Readiness, services: GatewayServices): Handlers {
  return {
    "own.ready": async (c) => {
      const report = await readiness.check();
      const rights = callerRights(c.get("caller"));
      // Operators see the wallet's figures; admins also the credit drift (the books against the team's bill) and the
      // config drift (admin edits since the last apply: docs/config-as-code.md).
      const shown = rights.readsAll ? report : publicView(report);
      const extras = rights.changesAll
        ? {
            credits: { drift: (await lastCreditDrift(services)) ?? null },
            config: { drift: await configDrift(services).then(driftSummary, () => null) },
          }
        : {};
      // With several upstream accounts: each one's breaker (operators see them by id; others how many are open). An
      // account whose breaker is not closed makes a ready gateway degraded: its new work goes to the others.
      const accounts = services.upstream.accounts;
      let status = shown.status;
      let accountView: Record<string, unknown> = {};
      if (accounts?.configured) {
        const all = accounts.snapshot();
        const notClosed = all.filter((a) => a.breaker !== "closed").length;
        if (status === "ready" && notClosed > 0) status = "degraded";
        accountView = {
          accounts: rights.readsAll
            ? all.map(({ id, weight, breaker, opened, live, hasKey }) => ({ id, weight, breaker, opened, live, hasKey }))
            : { total: all.length, breakerOpen: notClosed },
        };
      }
      return c.json({ ...shown, status, ...accountView, ...extras }, report.status === "not_ready" ? 503 : 200, {
        "cache-control": "no-store",
      });
    },
  };
}
