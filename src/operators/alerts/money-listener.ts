// The operators' ear on the money side: what payments announces through its port (src/payments/events.ts) becomes
// an alert (audit record, signed webhooks, ./webhooks.ts), savings are counted for the console (../actions/savings.ts),
// and a window exhausted by a tenant whose policy is `onExhausted = "stop"` pulls the kill switch (./kill-switch.ts).
// createGateway wires it in (src/gateway.ts).
import type { GatewayServices } from "../../services.js";
import type { Context } from "hono";
import type { Tenant } from "../../identity/tenants.js";
import type { MoneyEvents } from "../../payments/index.js";
import { killTenant } from "../actions/kill-switch.js";
import { type AlertedEvent, deliverBudgetEvent } from "./webhooks.js";

export function moneyListener(services: GatewayServices): MoneyEvents {
  return {
    announce(tenant, event, c) {
      // Savings are counted (for the console), not alerted: on the hot path, so nothing is awaited.
      if (event.type === "savings") return services.savings.record(c, tenant.id, event.how, event.savedAtomic);
      return alerted(tenant, event, c);
    },
  };
  async function alerted(tenant: Tenant, event: AlertedEvent, c?: Context): Promise<void> {
    deliverBudgetEvent(services, tenant, event, c);
    if (event.type === "budget.exhausted" && event.onExhausted === "stop")
      await killTenant(services, tenant.id, `${event.window} budget exhausted`);
  }
}
