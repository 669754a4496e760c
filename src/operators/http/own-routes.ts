// The gateway's own liveness and identity rows (src/routing/own-rows.ts): /_tollgate/health and /_tollgate/whoami.
import type { Context } from "hono";
import type { GatewayEnv } from "../../context.js";
import { VERSION } from "../version.js";

export const ownHandlers = {
  "own.health": (c: Context<GatewayEnv>) => c.json({ status: "ok", service: "tollgate", version: VERSION }),
  /** A "tenant-key" row: identify has set the caller. */
  "own.whoami": (c: Context<GatewayEnv>) => {
    const t = c.get("tenant")!;
    return c.json({ tenant: t.id, scopes: t.scopes });
  },
};
