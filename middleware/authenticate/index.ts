// Resolves the tenant from its key (`x-api-key` or `Authorization: Bearer`) and checks the route's scope.
import type { Context, MiddlewareHandler } from "hono";
import type { Scope } from "../../config/schema.js";
import type { GatewayEnv } from "../../src/context.js";
import { presentedKey, requireScope, type Tenant, type TenantDirectory } from "../../src/tenants.js";

/**
 * The tenant behind this request (resolved once, then remembered on the context), with `scope` required when given.
 * Throws 401 for an unknown, expired or disabled key, 403 for a missing scope.
 */
export async function authenticateTenant(c: Context<GatewayEnv>, directory: TenantDirectory, scope?: Scope): Promise<Tenant> {
  const tenant = c.get("tenant") ?? (await directory.authenticate(presentedKey(c.req.raw.headers)));
  c.set("tenant", tenant);
  c.get("logFields").tenant = tenant.id;
  if (scope) requireScope(tenant, scope);
  return tenant;
}

/**
 * @example app.use("/api/sandbox/*", authenticate(directory, "sandboxes"))
 */
export function authenticate(directory: TenantDirectory, scope?: Scope): MiddlewareHandler<GatewayEnv> {
  return async function authenticateMiddleware(c, next) {
    await authenticateTenant(c, directory, scope);
    await next();
  };
}
