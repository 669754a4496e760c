// Resolves the tenant from its key (`x-api-key` or `Authorization: Bearer`) and checks the route's scope.
import type { MiddlewareHandler } from "hono";
import type { Scope } from "../../config/schema.js";
import type { GatewayEnv } from "../../src/context.js";
import { presentedKey, requireScope, type TenantDirectory } from "../../src/tenants.js";

/**
 * @example app.use("/api/sandbox/*", authenticate(directory, "sandboxes"))
 */
export function authenticate(directory: TenantDirectory, scope?: Scope): MiddlewareHandler<GatewayEnv> {
  return async function authenticateMiddleware(c, next) {
    const tenant = await directory.authenticate(presentedKey(c.req.raw.headers));
    c.set("tenant", tenant);
    c.get("logFields").tenant = tenant.id;
    if (scope) requireScope(tenant, scope);
    await next();
  };
}
