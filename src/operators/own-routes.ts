// The gateway's own endpoints under /_tollgate, a prefix the upstream never uses (/api, /x402, /sandbox are its).
import { Hono } from "hono";
import type { GatewayEnv } from "../context.js";
import { authenticate } from "../../middleware/authenticate/index.js";
import type { TenantDirectory } from "../../middleware/identify/tenants.js";

export const OWN_PREFIX = "/_tollgate";
export const VERSION = "0.1.0";

export function ownRoutes(directory: TenantDirectory, extra?: (app: Hono<GatewayEnv>) => void): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.get("/health", (c) => c.json({ status: "ok", service: "tollgate", version: VERSION }));
  app.get("/whoami", authenticate(directory), (c) => {
    const t = c.get("tenant")!;
    return c.json({ tenant: t.id, scopes: t.scopes });
  });
  extra?.(app);
  return app;
}
