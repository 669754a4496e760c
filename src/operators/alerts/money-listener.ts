// The operators' ear on the money side: what payments announces through its port (src/payments/events.ts) becomes
// an alert (audit record, signed webhooks, ./webhooks.ts), and a window exhausted by a tenant whose policy is
// `onExhausted = "stop"` pulls the kill switch (./kill-switch.ts). createGateway wires it in (src/gateway.ts).
import type { GatewayServices } from "../../services.js";
import type { MoneyEvents } from "../../payments/events.js";
import { killTenant } from "../actions/kill-switch.js";
import { deliverBudgetEvent } from "./webhooks.js";

export function moneyListener(services: GatewayServices): MoneyEvents {
  return {
    async announce(tenant, event, c) {
      deliverBudgetEvent(services, tenant, event, c);
      if (event.type === "budget.exhausted" && event.onExhausted === "stop")
        await killTenant(services, tenant.id, `${event.window} budget exhausted`);
    },
  };
}
