// Per-tenant request rate limit (quotas.requestsPerMinute) on every row whose caller is a tenant key or gateway token.
import type { Context, MiddlewareHandler, Next } from "hono";
import { GatewayError } from "../../src/errors.js";
import { answerHeader } from "../../src/context.js";
import type { GatewayServices } from "../../src/services.js";
import "../../src/identity/caller.js";
import { FleetWindows, type WindowDecision } from "./fleet-windows.js";

const WINDOW_MS = 60_000;
/** A key's hits go to the shared counter at most once per this many ms while it answers in time (./fleet-windows.ts). */
const GATHER_MS = 20;

/**
 * Counts the request against its caller's tenant (the caller middleware/identify set: a key, or a gateway token for the
 * tenant that minted it) in a fixed per-minute window shared by every gateway instance (services.stores.rateLimiter),
 * and refuses with 429 `rate_limited` and `Retry-After` past it. Callers with no tenant (tickets, open rows called
 * without a credential, the metrics bearer, console sessions) pass uncounted. Mounted once per row by
 * middleware/chain.ts, so a request is counted once.
 *
 * The decision is this instance's (./fleet-windows.ts): the fleet's count as of its last batch plus its own hits since,
 * with no state round trip; the hits go to the shared counter behind the answer, in batches (one per GATHER_MS a key at
 * most, so a busy tenant costs the state a call every 20 ms, not one a request). N instances admit at most
 * N × ⌈limit / 50⌉ − 1 above the limit in a window (docs/rate-limits.md). One instance per call: its windows are this
 * gateway's (per isolate on Workers).
 * @example app.on("GET", "/_tollgate/usage", identify(services, row), rateLimit(services), handler)
 */
export function rateLimit(services: Pick<GatewayServices, "stores" | "now" | "background" | "sharedWaits">): MiddlewareHandler {
  let request: Context | undefined;
  const windows = new FleetWindows(
    services.stores.rateLimiter,
    // A batch is started by the request that admitted its first hit, and kept alive by its waitUntil on Workers.
    (work) => services.background(request, work, "rate limit batch"),
    services.now,
    GATHER_MS,
    services.sharedWaits,
  );
  // Not an async function: a request with no limit to count, or decided at once, passes on with no turn of its own.
  return function rateLimitMiddleware(c, next) {
    const caller = c.get("caller");
    const tenant = caller?.via === "key" || caller?.via === "token" ? caller.tenant : undefined;
    const limit = tenant?.quotas.requestsPerMinute;
    if (!tenant || limit === undefined) return next();
    const fields = c.get("logFields");
    if (fields) fields.tenant = tenant.id; // a refusal's log line names whom it refused (when access-log runs first)
    request = c;
    let decided: WindowDecision | Promise<WindowDecision>;
    try {
      decided = windows.decide(`tenant:${tenant.id}`, limit, WINDOW_MS);
    } finally {
      request = undefined;
    }
    if (decided instanceof Promise) return decided.then((r) => answer(c, next, r));
    return answer(c, next, decided);
  };

  function answer(c: Context, next: Next, r: WindowDecision): Promise<void> {
    const { limit } = r;
    const now = services.now();
    if (!r.allowed) {
      const retryAfter = Math.max(1, Math.ceil((r.resetAt - now) / 1000));
      // Rejected, not thrown: the step answers a promise either way, as an async step would.
      return Promise.reject(
        new GatewayError(
          429,
          "rate_limited",
          `This tenant may make ${limit} requests per minute; retry in ${retryAfter} s.`,
          { limit, windowSeconds: WINDOW_MS / 1000, remaining: 0, resetAt: new Date(r.resetAt).toISOString() },
          { "retry-after": String(retryAfter), "ratelimit-limit": String(limit), "ratelimit-remaining": "0" },
        ),
      );
    }
    // On whatever answers the request (middleware/request-id writes them): nothing is left to do after next().
    answerHeader(c, "ratelimit-limit", String(limit));
    answerHeader(c, "ratelimit-remaining", String(r.remaining));
    return next();
  }
}
