// The operator surface under /_tollgate: the admin API's rows (src/routing/own-rows.ts: an admin key, or an
// operator-readonly key for reads, both checked by the chain's identify step) and the OpenAPI document.
import type { GatewayServices } from "../../../services.js";
import type { Handlers } from "../../../routing/handlers.js";
import { consoleLinkHandlers } from "./console-links.js";
import { openApiDocument } from "../openapi.js";
import { keyAdminHandlers } from "./keys.js";
import { tenantAdminHandlers } from "./tenants.js";
import { viewAdminHandlers } from "./views.js";
import { webhookAdminHandlers } from "./webhooks.js";
import { requestLogHandlers } from "../request-routes.js";
import { configAdminHandlers } from "./config.js";

/** Every admin API row's handler by name, and GET /_tollgate/openapi.json. */
export function operatorHandlers(services: GatewayServices): Handlers {
  let document: unknown;
  return {
    "own.openapi": (c) => c.json((document ??= openApiDocument(services.config.server.publicOrigin))),
    ...consoleLinkHandlers(services),
    ...tenantAdminHandlers(services),
    ...keyAdminHandlers(services),
    ...viewAdminHandlers(services),
    ...webhookAdminHandlers(services), // the alert outbox: pending deliveries and dead letters
    ...requestLogHandlers(services), // the tenants' request logs: a tenant's own, any tenant's for operators
    ...configAdminHandlers(services), // config as code: export, diff, apply, drift
  };
}
