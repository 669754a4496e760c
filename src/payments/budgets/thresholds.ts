// Budget thresholds: when a tenant's spending crosses a percentage of a budget window (50/80/100 % by default), the
// `budget.threshold` event is announced exactly once per threshold and window across the fleet (an atomic
// set-if-absent in shared state decides which instance announces), and a window now full is announced exhausted.
import type { Context } from "hono";
import type { GatewayServices } from "../../services.js";
import { stateKeys } from "../../state/keys.js";
import { atomicToUsd } from "../money.js";
import { announceExhausted, type BudgetServices } from "./exhaustion.js";
import { isBudgeted, limitsOf } from "./limits.js";
import { untilWindowEndsMs, windowPeriod, WINDOWS } from "./windows.js";

/** The thresholds (percent) that `used` has reached of `limit`: exact, in bigint hundredths (no float rounding). */
export function reachedThresholds(used: bigint, limit: bigint, thresholds: readonly number[]): number[] {
  if (limit === 0n) return [];
  const hundredths = (used * 10_000n) / limit;
  return thresholds.filter((t) => hundredths >= BigInt(Math.round(t * 100)));
}

/**
 * What a threshold check touches: the budget room's services, and the markers this instance has already seen taken (by
 * itself or another instance; services.payments.thresholdsTaken): a threshold stays crossed until its window ends, so
 * later payments skip the shared set-if-absent for it.
 */
type ThresholdServices = BudgetServices & Pick<GatewayServices, "payments">;

/**
 * Called after spend is committed, beside the request `c`: announces each threshold the tenant's spending has now
 * crossed, once per window across the fleet, and a window that is now full as exhausted. Never throws.
 */
export async function checkBudget(services: ThresholdServices, tenantId: string, c?: Context): Promise<void> {
  try {
    const tenant = services.directory.get(tenantId);
    if (!tenant || !isBudgeted(tenant)) return;
    const limits = limitsOf(tenant);
    const now = services.now();
    const used = await services.stores.ledger.usage(tenantId, now);
    const thresholds = tenant.alerts?.thresholds ?? services.config.alerts.thresholds;
    for (const window of WINDOWS) {
      const limit = limits[window];
      if (limit === undefined || limit === 0n) continue;
      const period = windowPeriod(window, now);
      for (const threshold of reachedThresholds(used[window], limit, thresholds)) {
        const marker = stateKeys.budgetAlert(tenantId, window, period, threshold);
        const seen = services.payments.thresholdsTaken;
        if (seen.has(marker)) continue;
        const ttl = untilWindowEndsMs(window, now);
        const won = await services.stores.kv.setIfAbsent(marker, services.instanceId, ttl);
        seen.set(marker, true, ttl ? { ttl } : {});
        if (won)
          await services.moneyEvents?.announce(
            tenant,
            { type: "budget.threshold", window, period, threshold, spent: atomicToUsd(used[window]), limit: atomicToUsd(limit) },
            c,
          );
      }
      if (used[window] >= limit) await announceExhausted(services, tenantId, window, c);
    }
  } catch (err) {
    services.logger.error("budget alert check failed", { tenant: tenantId, error: String((err as Error)?.message ?? err) });
  }
}
