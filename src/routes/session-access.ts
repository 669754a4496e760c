// Who may use a browser session, and where its upstream endpoints are kept: shared by the sessions, CDP and token routes.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { presentedKey, requireScope, type Tenant } from "../tenants.js";
import { looksLikeGatewayToken, requireTokenScope, type GatewayToken, type TokenScope } from "../tokens.js";
import { upstreamJson } from "../upstream.js";
import { sessionEndpointsOf, type SessionEndpoints } from "../rewrite/session.js";

export const SESSION_TOKEN_SCOPES: TokenScope[] = ["cdp", "computer"];
/** Upstream endpoints are kept this long at most; a miss refetches the session detail. */
const ENDPOINTS_TTL_MS = 24 * 3600_000;

export function notFoundSession(id: string): GatewayError {
  return new GatewayError(404, "not_found", `Session ${id} not found`);
}

/** Throws the same 404 as an unknown id when the session is not the tenant's. */
export async function requireSessionOwner(services: GatewayServices, tenantId: string, id: string): Promise<void> {
  if ((await services.stores.ownership.owner("session", id)) !== tenantId) throw notFoundSession(id);
}

export async function mintSessionToken(services: GatewayServices, tenantId: string, id: string, opts: { scopes?: TokenScope[]; ttlSeconds?: number; keyless?: boolean } = {}) {
  return services.tokens.mint({
    tenant: tenantId,
    kind: "session",
    resource: id,
    scopes: opts.scopes ?? SESSION_TOKEN_SCOPES,
    ttlSeconds: opts.ttlSeconds ?? services.config.tokens.ttlSeconds,
    keyless: opts.keyless,
  });
}

export async function saveSessionEndpoints(services: GatewayServices, id: string, e: SessionEndpoints): Promise<void> {
  if (e.wsEndpoint || e.computerActionEndpoint) await services.stores.kv.set(`session:upstream:${id}`, JSON.stringify(e), ENDPOINTS_TTL_MS);
}

/** The session's upstream endpoints: from the store, or from a fresh upstream detail when they are not there. */
export async function sessionEndpoints(c: Context<GatewayEnv>, services: GatewayServices, id: string): Promise<SessionEndpoints> {
  const kept = await services.stores.kv.get(`session:upstream:${id}`);
  if (kept) return JSON.parse(kept) as SessionEndpoints;
  const res = await services.upstream.call(c, { method: "GET", path: `/api/session/${encodeURIComponent(id)}` });
  if (res.status === 404) throw notFoundSession(id);
  if (!res.ok) throw new GatewayError(502, "upstream_error", `The upstream could not describe session ${id} (HTTP ${res.status}).`);
  const endpoints = sessionEndpointsOf(await upstreamJson(res));
  await saveSessionEndpoints(services, id, endpoints);
  return endpoints;
}

function tenantOfToken(services: GatewayServices, t: GatewayToken): Tenant {
  const tenant = services.directory.get(t.tenant);
  if (!tenant || !tenant.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant that minted this token is disabled.");
  return tenant;
}

export interface SessionCaller {
  tenant: Tenant;
  /** Set when the caller presented a gateway session token rather than a tenant key. */
  token?: GatewayToken;
}

/**
 * Authenticates a caller of one session's CDP or computer-action endpoint: a gateway session token bound to this
 * session with `scope` (`?token=` or `Authorization: Bearer`), or the owning tenant's key (x-api-key, as the SDK sends).
 */
export async function authenticateSessionCaller(c: Context<GatewayEnv>, services: GatewayServices, id: string, scope: TokenScope): Promise<SessionCaller> {
  const presented = c.req.query("token") || presentedKey(c.req.raw.headers);
  let caller: SessionCaller;
  if (looksLikeGatewayToken(presented)) {
    const token = await services.tokens.verify(presented);
    if (token.kind !== "session") throw new GatewayError(403, "token_scope", `This is a ${token.kind} token; a session token is needed here.`, { requiredScope: scope });
    requireTokenScope(token, scope, id);
    caller = { tenant: tenantOfToken(services, token), token };
  } else {
    if (!presented && scope === "cdp") await services.tokens.verify(undefined); // token_missing: the URL lost its token
    const tenant = await services.directory.authenticate(presented);
    requireScope(tenant, "sessions");
    caller = { tenant };
  }
  c.set("tenant", caller.tenant);
  c.get("logFields").tenant = caller.tenant.id;
  await requireSessionOwner(services, caller.tenant.id, id);
  return caller;
}
