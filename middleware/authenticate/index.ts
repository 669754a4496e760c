// Resolves the tenant from its key (`x-api-key` or `Authorization: Bearer`) and checks the route's scope.
import type { Context, MiddlewareHandler } from "hono";
import type { Scope } from "../../config/schema.js";
import { presentedKey, requireScope, type Tenant, type TenantDirectory } from "../identify/tenants.js";

declare module "hono" {
  interface ContextVariableMap {
    /** The tenant behind the request, once a key or token has been checked. */
    tenant: Tenant | undefined;
  }
}

/**
 * The tenant behind this request (resolved once, then remembered on the context), with `scope` required when given.
 * Throws 401 for an unknown, expired or disabled key, 403 for a missing scope.
 */
export async function authenticateTenant(c: Context, directory: TenantDirectory, scope?: Scope): Promise<Tenant> {
  const tenant = c.get("tenant") ?? (await directory.authenticate(presentedKey(c.req.raw.headers)));
  c.set("tenant", tenant);
  c.get("logFields").tenant = tenant.id;
  if (scope) requireScope(tenant, scope);
  return tenant;
}

/**
 * @example app.use("/api/sandbox/*", authenticate(directory, "sandboxes"))
 */
export function authenticate(directory: TenantDirectory, scope?: Scope): MiddlewareHandler {
  return async function authenticateMiddleware(c, next) {
    await authenticateTenant(c, directory, scope);
    await next();
  };
}
