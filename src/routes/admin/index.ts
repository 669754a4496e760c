// The operator surface under /_tollgate: the admin API (tenant key with the "admin" scope) and the OpenAPI document.
import { Hono } from "hono";
import type { GatewayEnv } from "../../context.js";
import type { GatewayServices } from "../../services.js";
import { authenticate } from "../../../middleware/authenticate/index.js";
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
  app.use("/admin/*", authenticate(services.directory, "admin"));
  app.route("/admin", tenantAdminRoutes(services));
  app.route("/admin", keyAdminRoutes(services));
  app.route("/admin", viewAdminRoutes(services));
  app.route("/admin", webhookAdminRoutes(services)); // the alert outbox: pending deliveries and dead letters
  return app;
}
