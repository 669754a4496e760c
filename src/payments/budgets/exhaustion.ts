// A budget window running out: the 402 a call gets when a window cannot take its price, the exhausted mark (set once
// per window across the fleet, announced through the money events port), and the refusal of a tenant whose policy is
// `onExhausted = "stop"` until that window resets.
import type { Context } from "hono";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import type { Tenant } from "../../identity/tenants.js";
import { stateKeys } from "../../state/keys.js";
import type { BudgetWindow, ReserveResult } from "../../state/types.js";
import { atomicToUsd } from "../money.js";
import { limitsOf } from "./limits.js";
import { untilWindowEndsMs, windowPeriod, windowResetAt, WINDOWS } from "./windows.js";

/** What the budget room touches: the tenants, the ledger and markers, the clock, the log, background work, the port. */
export type BudgetServices = Pick<
  GatewayServices,
  "config" | "directory" | "stores" | "now" | "logger" | "background" | "instanceId" | "moneyEvents"
>;

/**
 * A window of the tenant ran out (a reservation was refused, or a commit reached the limit): the first to see it in
 * this window, across the fleet, sets the exhausted mark and announces `budget.exhausted` (the listener sends the
 * alert and, for `onExhausted = "stop"`, pulls the kill switch). Never throws (it runs beside the request `c`).
 */
export async function announceExhausted(services: BudgetServices, tenantId: string, window: BudgetWindow, c?: Context): Promise<void> {
  try {
    const tenant = services.directory.get(tenantId);
    if (!tenant) return;
    const now = services.now();
    const period = windowPeriod(window, now);
    const first = await services.stores.kv.setIfAbsent(
      stateKeys.budgetExhausted(tenantId, window, period),
      services.instanceId,
      untilWindowEndsMs(window, now),
    );
    if (!first) return;
    await services.moneyEvents?.announce(tenant, { type: "budget.exhausted", window, period, onExhausted: tenant.onExhausted }, c);
  } catch (err) {
    services.logger.error("budget exhaustion handling failed", { tenant: tenantId, window, error: String((err as Error)?.message ?? err) });
  }
}

/** The window whose exhausted mark is set for this period, if any (the first of the tenant's limited windows). */
export async function exhaustedWindow(
  services: Pick<BudgetServices, "stores">,
  tenant: Tenant,
  now: number,
): Promise<BudgetWindow | undefined> {
  const limits = limitsOf(tenant);
  const windows = WINDOWS.filter((w) => limits[w] !== undefined);
  const marks = await Promise.all(
    windows.map((w) => services.stores.kv.get(stateKeys.budgetExhausted(tenant.id, w, windowPeriod(w, now)))),
  );
  return windows.find((_, i) => marks[i] !== undefined);
}

/** The 402 for a tenant stopped by its `onExhausted = "stop"` policy until `window` resets. */
export function stoppedRefusal(tenant: Tenant, window: BudgetWindow, price: bigint, now: number): GatewayError {
  const reset = windowResetAt(window, now);
  return new GatewayError(
    402,
    "budget_exceeded",
    `The ${window} budget of tenant "${tenant.id}" ran out and its onExhausted policy is "stop": paid calls are refused until the window resets${reset ? ` at ${reset}` : ""}.`,
    { window, stopped: true, price: atomicToUsd(price), resetAt: reset ?? undefined },
  );
}

/** The 402 for a tenant whose budget window cannot take `price`; the exhaustion is announced beside the request. */
export function budgetExceeded(
  services: BudgetServices,
  tenant: Tenant,
  r: Extract<ReserveResult, { ok: false }>,
  price: bigint,
  context?: Context,
): GatewayError {
  services.background(context, announceExhausted(services, tenant.id, r.window, context), "budget exhaustion");
  return new GatewayError(
    402,
    "budget_exceeded",
    `The ${r.window} budget of tenant "${tenant.id}" cannot cover this call: $${atomicToUsd(r.spent)} of $${atomicToUsd(r.limit)} spent, this call costs $${atomicToUsd(price)}.${r.resetAt ? ` It resets at ${r.resetAt}.` : ""}`,
    { window: r.window, limit: atomicToUsd(r.limit), spent: atomicToUsd(r.spent), price: atomicToUsd(price), resetAt: r.resetAt },
  );
}
