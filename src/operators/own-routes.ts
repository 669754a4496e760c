// The gateway's own liveness and identity rows (src/routing/own-rows.ts): /_tollgate/health and /_tollgate/whoami.
// (Imports nothing of the chain: the version is read by metrics and the OpenAPI document too.)
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";

export const VERSION = "0.1.0";

export const ownHandlers = {
  "own.health": (c: Context<GatewayEnv>) => c.json({ status: "ok", service: "tollgate", version: VERSION }),
  /** A "tenant-key" row: identify has set the caller. */
  "own.whoami": (c: Context<GatewayEnv>) => {
    const t = c.get("tenant")!;
    return c.json({ tenant: t.id, scopes: t.scopes });
  },
};
