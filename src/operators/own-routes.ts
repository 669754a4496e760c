// The gateway's own liveness and identity rows (src/routing/own-rows.ts): /_tollgate/health and /_tollgate/whoami.
import type { RowHandler } from "../routing/handlers.js";
import { callerTenant } from "../../middleware/identify/index.js";

export const VERSION = "0.1.0";

export const ownHandlers: Record<string, RowHandler> = {
  "own.health": (c) => c.json({ status: "ok", service: "tollgate", version: VERSION }),
  "own.whoami": (c) => {
    const t = callerTenant(c);
    return c.json({ tenant: t.id, scopes: t.scopes });
  },
};
