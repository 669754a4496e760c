// Who is calling, identified once at the head of a row's chain: a tenant key, or one of the gateway's own tokens.
// Scope, rate limit, quota, budget and ownership all read the one `caller` this sets; no route parses credentials.
import type { Context, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import { bearerToken, presentedKey, requireScope, type Tenant } from "./tenants.js";
import { looksLikeGatewayToken, requireTokenScope, type GatewayToken } from "./tokens.js";
import type { RouteRow } from "../../src/routing/table.js";
import { isWebSocketUpgrade } from "../../src/platform/websocket.js";

type Caller =
  | { via: "key"; tenant: Tenant }
  | {
      via: "token";
      tenant: Tenant;
      token: GatewayToken /** The token as presented, for checks while a socket is open. */;
      presented: string;
    }
  | { via: "ticket" };

declare module "hono" {
  interface ContextVariableMap {
    caller: Caller;
  }
}

/** The tenant a key or token caller acts for (ticket callers have none). */
export function callerTenant(c: Context<GatewayEnv>): Tenant {
  const caller = c.get("caller");
  if (!caller || caller.via === "ticket") throw new GatewayError(401, "unauthorized", "This route needs a tenant key or a gateway token.");
  return caller.tenant;
}

/** A keyless search or MCP token's own spend cap, when the caller holds one. */
export function callerCap(c: Context<GatewayEnv>): { id: string; amount: bigint } | undefined {
  const caller = c.get("caller");
  return caller?.via === "token" && caller.token.cap !== undefined ? { id: caller.token.jti, amount: caller.token.cap } : undefined;
}

const TOKEN_KIND: Record<string, GatewayToken["kind"]> = {
  "search-token": "search",
  "sandbox-token": "sandbox",
  "session-token": "session",
};

/**
 * Identifies the caller of a row from the credentials the row accepts, then checks its scope and, for tokens bound to
 * one resource, that the resource is the one in the path. WebSocket and CDP clients (which cannot set headers) may put
 * a gateway token in `?token=`.
 * @example app.on("POST", "/api/sandbox", identify(services, row), handler)
 */
export function identify(services: GatewayServices, row: RouteRow): MiddlewareHandler<GatewayEnv> {
  const acceptsKey = row.auth.includes("key");
  const tokenKinds = new Set(row.auth.map((a) => TOKEN_KIND[a]).filter(Boolean));
  const open = row.auth.includes("none") || row.auth.includes("ticket");
  const boundParam = row.owns?.param;

  return async function identifyCaller(c, next) {
    const f = c.get("logFields");
    f.route = row.name;
    if (open) {
      c.set("caller", { via: "ticket" });
      return next();
    }
    const fromHeader = tokenKinds.size > 0 && !acceptsKey ? bearerToken(c.req.raw.headers) : presentedKey(c.req.raw.headers);
    // `?token=` only where a client cannot send headers: a WebSocket upgrade (and it is never forwarded).
    const presented = fromHeader ?? (tokenKinds.size > 0 && isWebSocketUpgrade(c.req.raw) ? c.req.query("token") : undefined);
    let caller: Caller;
    const asToken = (tokenKinds.size > 0 || acceptsKey) && looksLikeGatewayToken(presented) ? presented : undefined;
    const token = asToken ? await services.tokens.verify(asToken) : undefined;
    if (asToken && token && acceptsKey && token.kind === "mcp") {
      caller = { via: "token", tenant: mcpTokenTenant(services, row, token), token, presented: asToken };
    } else if (asToken && token && tokenKinds.size > 0) {
      if (!tokenKinds.has(token.kind)) {
        if (acceptsKey) throw new GatewayError(401, "tenant_key_required", `This route takes a tenant key, not a ${token.kind} token.`);
        throw new GatewayError(
          403,
          "token_scope",
          `This is a ${token.kind} token; this route needs a ${[...tokenKinds].join(" or ")} token.`,
        );
      }
      requireTokenScope(
        token,
        row.tokenScope ?? "search",
        token.resource !== undefined && boundParam ? c.req.param(boundParam) : undefined,
      );
      const tenant = services.directory.get(token.tenant);
      if (!tenant?.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant this token was minted for is disabled.");
      caller = { via: "token", tenant, token, presented: asToken };
    } else if (acceptsKey) {
      if (looksLikeGatewayToken(presented))
        throw new GatewayError(401, "tenant_key_required", "This route takes a tenant key, not a gateway token.");
      if (!presented && tokenKinds.has("session")) await services.tokens.verify(undefined); // token_missing: a CDP URL lost its token
      const tenant = await services.directory.authenticate(presented);
      requireScope(tenant, row.scope);
      caller = { via: "key", tenant };
    } else {
      await services.tokens.verify(presented); // missing or not a token: 401 saying so
      throw new GatewayError(401, "unauthorized", "This route needs a gateway token.");
    }
    c.set("caller", caller);
    c.set("tenant", caller.tenant);
    f.tenant = caller.tenant.id;
    return next();
  };
}

/**
 * A keyless MCP token (POST /_tollgate/tokens {"kind":"mcp"}) stands in for its tenant's key on a row that takes one:
 * the row's scope must be the token's and its tenant's; the token's cap applies to whatever the row spends (callerCap).
 */
function mcpTokenTenant(services: GatewayServices, row: RouteRow, token: GatewayToken): Tenant {
  if (!(token.scopes as string[]).includes(row.scope))
    throw new GatewayError(403, "token_scope", `This token does not allow "${row.scope}" (it allows: ${token.scopes.join(", ")}).`, {
      requiredScope: row.scope,
    });
  const tenant = services.directory.get(token.tenant);
  if (!tenant?.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant this token was minted for is disabled.");
  requireScope(tenant, row.scope);
  return tenant;
}
