// Admin API: the alert outbox — webhook deliveries waiting (with their attempts and last error) and the dead letters.
// Receivers are shown by host only: a webhook URL (a Slack one, say) often carries its own secret.
import type * as z from "zod";
import type { GatewayServices } from "../../../services.js";
import type { OutboxMessage } from "../../../state/types.js";
import { validQuery } from "./validate.js";
import { type outboxMessageView, outboxQuery } from "../../../routing/admin-schemas.js";
import type { Handlers } from "../../../routing/handlers.js";

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
