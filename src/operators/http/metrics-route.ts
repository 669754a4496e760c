// GET /_tollgate/metrics: the Prometheus exposition, for an operator key (admin, operator-readonly) or the
// TOLLGATE_METRICS_TOKEN bearer (both checked by the chain's identify step: the row's callers are "metrics-token", "operator").
import type { GatewayServices } from "../../services.js";
import type { GatewayMetrics } from "../../telemetry/gateway-metrics.js";
import type { Handlers } from "../../routing/handlers.js";

export function metricsHandlers(services: GatewayServices, metrics: GatewayMetrics): Handlers {
  return {
    "own.metrics": async (c) => {
      // Scrape-time gauges (budgets, held amounts) are read from the ledger now, so every instance reports the same.
      await metrics.collectLedger(services.stores, services.directory, services.now());
      return c.body(await metrics.render(), 200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" });
    },
  };
}
