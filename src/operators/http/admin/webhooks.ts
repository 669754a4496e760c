// Admin API: the alert outbox — webhook deliveries waiting (with their attempts and last error) and the dead letters.
// Receivers are shown by host only: a webhook URL (a Slack one, say) often carries its own secret.
import * as z from "zod";
import type { GatewayServices } from "../../../services.js";
import type { OutboxMessage } from "../../../state/types.js";
import { validQuery } from "./validate.js";
import type { Handlers } from "../../../routing/handlers.js";

export const outboxQuery = z.object({
  state: z.enum(["pending", "dead"]).default("pending"),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export const outboxMessageView = z
  .object({
    id: z.string(),
    event: z.string().describe("The `webhook-id` receivers dedupe on"),
    receiver: z.string().describe("The receiver's host"),
    format: z.enum(["standard", "slack"]),
    attempts: z.number(),
    nextAt: z.string().describe("When it is next due (while claimed: when the claim lapses)"),
    createdAt: z.string(),
    lastError: z.string().optional(),
  })
  .meta({ id: "OutboxMessage" });

function view(m: OutboxMessage): z.infer<typeof outboxMessageView> {
  let receiver = "(invalid)";
  try {
    receiver = new URL(m.destination).host;
  } catch {}
  return {
    id: m.id,
    event: m.event,
    receiver,
    format: m.format === "slack" ? "slack" : "standard",
    attempts: m.attempts,
    nextAt: new Date(m.nextAt).toISOString(),
    createdAt: new Date(m.createdAt).toISOString(),
    ...(m.lastError ? { lastError: m.lastError } : {}),
  };
}

/** GET /_tollgate/admin/webhooks (src/routing/own-rows.ts). */
export function webhookAdminHandlers(services: GatewayServices): Handlers {
  return {
    "admin.webhooks": async (c) => {
      const q = validQuery(c, outboxQuery);
      return c.json({ state: q.state, messages: (await services.stores.outbox.list(q.state, q.limit)).map(view) });
    },
  };
}
