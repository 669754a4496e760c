// Budget alerts: when a tenant's spending crosses a threshold of a budget window (50/80/100 % by default), one audit
// record and one signed webhook per receiver, exactly once per threshold and window across the fleet (an atomic
// set-if-absent in shared state decides which instance records and sends), then delivered from the durable outbox
// (./webhooks.ts): retried across restarts and instances. Receivers dedupe on the `webhook-id` header.
import type { Context } from "hono";
import type { GatewayServices } from "../services.js";
import type { BudgetWindow } from "../state/types.js";
import { tenantLimits } from "../payments/limits.js";
import { atomicToUsd } from "../payments/money.js";
import { untilWindowEndsMs, windowPeriod } from "./budget-windows.js";
import { type AlertServices, deliverBudgetEvent } from "./webhooks.js";
import { stateKeys } from "../state/keys.js";
import { LRUCache } from "lru-cache";

const WINDOWS: BudgetWindow[] = ["daily", "monthly", "total"];

/**
 * Markers this instance has already seen taken (by itself or another instance), per gateway: a threshold stays crossed
 * until its window ends, so later payments skip the shared set-if-absent for it.
 */
/** Budget alerts: the alert services, and the announcement of an exhausted window (the kill switch's). */
export type BudgetAlertServices = AlertServices & Pick<GatewayServices, "onBudgetExhausted">;

const taken = new WeakMap<BudgetAlertServices, LRUCache<string, true>>();
const takenBy = (services: BudgetAlertServices) => {
  let t = taken.get(services);
  if (!t) taken.set(services, (t = new LRUCache<string, true>({ max: 10_000, ttlAutopurge: false })));
  return t;
};

/**
 * Called after a payment is committed, beside the request `c`: records (and sends to the receivers, if any) each
 * threshold the tenant's spending has now crossed, once per window across the fleet, and hands a window that is now
 * full to onBudgetExhausted. Never throws.
 */
export async function checkBudgetAlerts(services: BudgetAlertServices, tenantId: string, c?: Context): Promise<void> {
  try {
    const tenant = services.directory.get(tenantId);
    if (!tenant) return;
    const limits = tenantLimits(tenant);
    if (WINDOWS.every((w) => limits[w] === undefined)) return;
    const now = services.now();
    const used = await services.stores.ledger.usage(tenantId, now);
    const thresholds = tenant.alerts?.thresholds ?? services.config.alerts.thresholds;
    for (const window of WINDOWS) {
      const limit = limits[window];
      if (limit === undefined || limit === 0n) continue;
      const period = windowPeriod(window, now);
      // Percent in hundredths, exact: bigint, no float rounding at the boundary.
      const hundredths = (used[window] * 10_000n) / limit;
      for (const threshold of thresholds) {
        if (hundredths < BigInt(Math.round(threshold * 100))) continue;
        const marker = stateKeys.budgetAlert(tenantId, window, period, threshold);
        const seen = takenBy(services);
        if (seen.has(marker)) continue;
        const ttl = untilWindowEndsMs(window, now);
        const won = await services.stores.kv.setIfAbsent(marker, services.instanceId, ttl);
        seen.set(marker, true, ttl ? { ttl } : {});
        if (won)
          deliverBudgetEvent(
            services,
            tenant,
            { type: "budget.threshold", window, period, threshold, spent: atomicToUsd(used[window]), limit: atomicToUsd(limit) },
            c,
          );
      }
      if (used[window] >= limit) await services.onBudgetExhausted?.(tenantId, window, c);
    }
  } catch (err) {
    services.logger.error("budget alert check failed", { tenant: tenantId, error: String((err as Error)?.message ?? err) });
  }
}
