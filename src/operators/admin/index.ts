// The operator surface under /_tollgate: the admin API (tenant key with the "admin" scope) and the OpenAPI document.
import { Hono } from "hono";
import type { GatewayEnv } from "../../context.js";
import type { GatewayServices } from "../../services.js";
import { authenticateTenant } from "../../../middleware/authenticate/index.js";
import { GatewayError } from "../../errors.js";
import { requireScope } from "../../../middleware/identify/tenants.js";
import { roleOf } from "../roles.js";
import { consoleLinkRoutes } from "../../console/link.js";
import { openApiDocument } from "../openapi.js";
import { keyAdminRoutes } from "./keys.js";
import { tenantAdminRoutes } from "./tenants.js";
import { viewAdminRoutes } from "./views.js";
import { webhookAdminRoutes } from "./webhooks.js";

/**
 * @example app.route("/_tollgate", operatorRoutes(services)) // /_tollgate/admin/tenants, /_tollgate/openapi.json
 */
export function operatorRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  let document: unknown;
  app.get("/openapi.json", (c) => c.json((document ??= openApiDocument(services.config.server.publicOrigin))));
  // An admin key does anything here; an operator-readonly key only reads (GET), and is refused any change.
  app.use("/admin/*", async function operatorOnly(c, next) {
    const tenant = await authenticateTenant(c, services.directory);
    const role = roleOf(tenant);
    const reads = c.req.method === "GET" || c.req.method === "HEAD";
    if (role === "readonly" && !reads && !c.req.path.endsWith("/admin/console-links"))
      throw new GatewayError(
        403,
        "read_only",
        "This key has the operator-readonly scope: it may read the admin API but not change anything.",
      );
    if (role === "tenant") requireScope(tenant, "admin");
    await next();
  });
  app.route("/admin", consoleLinkRoutes(services));
  app.route("/admin", tenantAdminRoutes(services));
  app.route("/admin", keyAdminRoutes(services));
  app.route("/admin", viewAdminRoutes(services));
  app.route("/admin", webhookAdminRoutes(services)); // the alert outbox: pending deliveries and dead letters
  return app;
}
