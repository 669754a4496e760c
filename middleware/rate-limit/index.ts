// Per-tenant request rate limit (quotas.requestsPerMinute) on every row whose caller is a tenant key or gateway token.
import type { Context, MiddlewareHandler, Next } from "hono";
import { GatewayError } from "../../src/errors.js";
import { answerHeader } from "../../src/context.js";
import type { GatewayServices } from "../../src/services.js";
import "../../src/identity/caller.js";

const WINDOW_MS = 60_000;

/**
 * Counts the request against its caller's tenant (the caller middleware/identify set: a key, or a gateway token for the
 * tenant that minted it) in a fixed per-minute window shared by every gateway instance (services.stores.rateLimiter),
 * and refuses with 429 `rate_limited` and `Retry-After` past it. Callers with no tenant (tickets, open rows called
 * without a credential, the metrics bearer, console sessions) pass uncounted. Mounted once per row by
 * middleware/chain.ts, so a request is counted once.
 * @example app.on("GET", "/_tollgate/usage", identify(services, row), rateLimit(services), handler)
 */
export function rateLimit(services: Pick<GatewayServices, "stores" | "now">): MiddlewareHandler {
  // Not an async function: a request with no limit to count passes on with no promise or turn of its own.
  return function rateLimitMiddleware(c, next) {
    const caller = c.get("caller");
    const tenant = caller?.via === "key" || caller?.via === "token" ? caller.tenant : undefined;
    const limit = tenant?.quotas.requestsPerMinute;
    if (!tenant || limit === undefined) return next();
    return counted(c, next, tenant.id, limit);
  };

  async function counted(c: Context, next: Next, tenantId: string, limit: number): Promise<void> {
    const fields = c.get("logFields");
    if (fields) fields.tenant = tenantId; // a refusal's log line names whom it refused (when access-log runs first)
    const now = services.now();
    const r = await services.stores.rateLimiter.hit(`tenant:${tenantId}`, limit, WINDOW_MS, now);
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
    // On whatever answers the request (middleware/request-id writes them): nothing is left to do after next().
    answerHeader(c, "ratelimit-limit", String(limit));
    answerHeader(c, "ratelimit-remaining", String(r.remaining));
    return next();
  }
}
