// Per-tenant request rate limit (quotas.requestsPerMinute) on every request that carries a tenant key or gateway token.
import type { MiddlewareHandler } from "hono";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import { presentedKey, type Tenant } from "../identify/tenants.js";
import { looksLikeGatewayToken } from "../identify/tokens.js";
import "../identify/index.js";

const WINDOW_MS = 60_000;

/**
 * Counts the request against its tenant's per-minute limit in a fixed window shared by every gateway instance
 * (services.stores.rateLimiter) and refuses with 429 `rate_limited` and `Retry-After` past it. A request whose key or
 * token is not valid passes untouched: authentication is the route's job, this only counts. Gateway tokens count
 * against the tenant that minted them.
 * @example app.use("/api/*", rateLimit(services))
 */
export function rateLimit(services: GatewayServices): MiddlewareHandler {
  async function tenantOf(presented: string | undefined): Promise<Tenant | undefined> {
    if (!presented) return undefined;
    try {
      if (looksLikeGatewayToken(presented)) return services.directory.get((await services.tokens.verify(presented)).tenant);
      return await services.directory.authenticate(presented);
    } catch {
      return undefined;
    }
  }

  return async function rateLimitMiddleware(c, next) {
    // Route-table rows identified their caller already; the gateway's own endpoints are counted from their credentials.
    const caller = c.get("caller");
    const tenant = caller
      ? caller.via === "ticket"
        ? undefined
        : caller.tenant
      : await tenantOf(presentedKey(c.req.raw.headers) ?? c.req.query("token"));
    const limit = tenant?.quotas.requestsPerMinute;
    if (!tenant || limit === undefined) return next();
    const fields = c.get("logFields");
    if (fields) fields.tenant = tenant.id; // a refusal's log line names whom it refused (when access-log runs first)
    const now = services.now();
    const r = await services.stores.rateLimiter.hit(`tenant:${tenant.id}`, limit, WINDOW_MS, now);
    if (!r.allowed) {
      const retryAfter = Math.max(1, Math.ceil((r.resetAt - now) / 1000));
      throw new GatewayError(
        429,
        "rate_limited",
        `This tenant may make ${limit} requests per minute; retry in ${retryAfter} s.`,
        { limit, windowSeconds: WINDOW_MS / 1000, remaining: 0, resetAt: new Date(r.resetAt).toISOString() },
        { "retry-after": String(retryAfter), "ratelimit-limit": String(limit), "ratelimit-remaining": "0" },
      );
    }
    await next();
    try {
      c.res.headers.set("ratelimit-limit", String(limit));
      c.res.headers.set("ratelimit-remaining", String(r.remaining));
    } catch {
      /* immutable response (WebSocket upgrade on some runtimes) */
    }
  };
}
