// Who is calling, identified once at the head of a row's chain: a tenant key, one of the gateway's own tokens, the
// metrics bearer or the console's session cookie. Scope, rate limit, quota, budget and ownership all read the one
// `caller` this sets; no route parses credentials.
import type { Context, MiddlewareHandler, Next } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import { bearerToken, presentedKey, requireScope, type Tenant } from "../../src/identity/tenants.js";
import { looksLikeGatewayToken, MCP_SCOPES, requireTokenScope, type GatewayToken } from "../../src/identity/tokens.js";
import type { RouteRow } from "../../src/routing/row.js";
import type { Scope } from "../../config/tenant-schema.js";
import { isWebSocketUpgrade } from "../../src/web/websocket.js";
import { rightsOf } from "../../src/identity/roles.js";
import { publicOriginOf } from "../../src/web/public-origin.js";
import { SESSION_COOKIE, sessionById } from "../../src/identity/console-session.js";
import type { Caller, TenantCaller } from "../../src/identity/caller.js";
import { ACCESS_HEADER, actorOf, identityTenant, looksLikeProviderJwt } from "../../src/identity/sign-in.js";
import { getCookie } from "hono/cookie";
import { requireParentKey, tokenParents } from "../../src/identity/lineage.js";
import { sessionPersonStands } from "../../src/identity/persons.js";
import { toolsReach } from "../../src/routing/tool-rows.js";

/** What identify reads: keys (directory), tokens, the console's sessions (stores), the clock, the metrics bearer check, and (for an MCP challenge) where clients reach the gateway. */
type IdentifyServices = Pick<
  GatewayServices,
  "tokens" | "directory" | "stores" | "now" | "isMetricsToken" | "config" | "trustedProxy" | "peerAddress" | "platform" | "signIn"
>;

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
export function identify(services: IdentifyServices, row: RouteRow): MiddlewareHandler<GatewayEnv> {
  if (row.auth.some((a) => OWN_CREDENTIALS.has(a))) return identifyOwn(services, row);
  const acceptsKey = row.auth.includes("key");
  const tokenKinds = new Set(row.auth.map((a) => TOKEN_KIND[a]).filter(Boolean));
  const open = row.auth.includes("none") || row.auth.includes("ticket");
  const boundParam = row.owns?.param;
  const platform = services.platform;

  /** The caller its verified token makes (when it presents one), else its key's; refusals as the row's auth decides. */
  const callerOf = (
    c: Context<GatewayEnv>,
    presented: string | undefined,
    asToken?: string,
    token?: GatewayToken,
  ): TenantCaller | Promise<TenantCaller> => {
    if (asToken && token && acceptsKey && token.kind === "mcp") {
      const tenant = mcpTokenTenant(services, row, token);
      tokenReaches(services, c, row, token);
      return { via: "token", tenant, token, presented: asToken };
    }
    if (asToken && token && tokenKinds.size > 0) {
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
      const tenant = tokenParents(services.directory, token, services.now());
      tokenReaches(services, c, row, token);
      return { via: "token", tenant, token, presented: asToken };
    }
    if (acceptsKey) {
      if (looksLikeGatewayToken(presented))
        throw new GatewayError(401, "tenant_key_required", "This route takes a tenant key, not a gateway token.");
      // token_missing: a CDP URL lost its token
      if (!presented && tokenKinds.has("session")) return services.tokens.verify(undefined).then(() => keyCaller(presented));
      return keyCaller(presented);
    }
    return services.tokens.verify(presented).then(() => {
      // missing or not a token: verify refused it saying so
      throw new GatewayError(401, "unauthorized", "This route needs a gateway token.");
    });
  };

  /** A tenant key's caller: at once when the key was checked lately, else once the directory has checked it. */
  const keyCaller = (presented: string | undefined): TenantCaller | Promise<TenantCaller> => {
    const known = services.directory.authenticateNow(presented);
    return known ? keyCallerOf(known, presented) : services.directory.authenticate(presented).then((t) => keyCallerOf(t, presented));
  };
  const keyCallerOf = (tenant: Tenant, presented: string | undefined): TenantCaller => {
    if (row.scope) requireScope(tenant, row.scope);
    return { via: "key", tenant, presented: presented! };
  };

  const admit = (c: Context<GatewayEnv>, caller: TenantCaller, next: Next) => {
    c.set("caller", caller);
    c.set("tenant", caller.tenant);
    c.get("logFields").tenant = caller.tenant.id;
    return next();
  };

  // Not an async function: a key or token checked lately admits its caller with no promise or turn of its own.
  // Refusals are thrown as they are; Hono's chain answers them either way.
  return function identifyCaller(c, next) {
    c.get("logFields").route = row.name;
    // A sold row's buyer (src/sales): the payment was verified, the caller is its wallet tenant.
    const sold = c.get("soldCaller");
    if (sold) {
      if (row.scope) requireScope(sold.tenant, row.scope);
      return admit(c, sold, next);
    }
    if (open) {
      c.set("caller", { via: "ticket" });
      return next();
    }
    const fromHeader = tokenKinds.size > 0 && !acceptsKey ? bearerToken(c.req.raw.headers) : presentedKey(platform, c);
    // `?token=` only where a client cannot send headers: a WebSocket upgrade (and it is never forwarded).
    const presented = fromHeader ?? (tokenKinds.size > 0 && isWebSocketUpgrade(c.req.raw) ? c.req.query("token") : undefined);
    const asToken = (tokenKinds.size > 0 || acceptsKey) && looksLikeGatewayToken(presented) ? presented : undefined;
    let caller: TenantCaller | Promise<TenantCaller>;
    if (asToken) {
      // A token's parents (its tenant enabled, its key held) are read from a snapshot no older than a key lookup's:
      // under traffic it is recent and nothing waits; after a pause the one check a key lookup would make.
      const stale = services.directory.stale();
      const token = stale ? undefined : services.tokens.verifyNow(asToken);
      caller = token
        ? callerOf(c, presented, asToken, token)
        : (stale ?? Promise.resolve()).then(() => services.tokens.verify(asToken)).then((t) => callerOf(c, presented, asToken, t));
    } else caller = callerOf(c, presented);
    return caller instanceof Promise ? caller.then((k) => admit(c, k, next)) : admit(c, caller, next);
  };
}

/**
 * A keyless MCP token (POST /_tollgate/tokens {"kind":"mcp"}) stands in for its tenant's key on a row that takes one:
 * the row's scope must be the token's and its tenant's; the token's cap applies to whatever the row spends (callerCap).
 */
function mcpTokenTenant(services: IdentifyServices, row: RouteRow, token: GatewayToken): Tenant {
  if (!row.scope || !(token.scopes as string[]).includes(row.scope))
    throw new GatewayError(403, "token_scope", `This token does not allow "${row.scope}" (it allows: ${token.scopes.join(", ")}).`, {
      requiredScope: row.scope,
    });
  const tenant = tokenParents(services.directory, token, services.now());
  requireScope(tenant, row.scope);
  return tenant;
}

/**
 * The one check of what a token was issued for, on every row it is presented to (HTTP and MCP alike: an MCP tool call
 * is a request through the same row): its audience (RFC 8707: an OAuth access token's `resource`, the gateway's origin
 * or its `/mcp`), and an OAuth grant's tool choice (src/routing/tool-rows.ts: the rows each tool reaches). Scopes are
 * checked beside it by the caller's kind (mcpTokenTenant, requireTokenScope). A token with neither claim passes.
 */
function tokenReaches(services: IdentifyServices, c: Context<GatewayEnv>, row: RouteRow, token: GatewayToken): void {
  if (token.aud !== undefined) {
    const origin = publicOriginOf(c, services);
    if (token.aud !== `${origin}/mcp` && token.aud !== origin && token.aud !== `${origin}/`)
      throw new GatewayError(401, "token_audience", `This token was issued for ${token.aud}, not for this gateway.`);
  }
  if (token.tools && !toolsReach(token.tools, row.name))
    throw new GatewayError(
      403,
      "token_tool",
      `This token's grant does not allow what ${row.name} does (it allows the tools: ${token.tools.join(", ")}).`,
      { allowedTools: token.tools },
    );
}

const OWN_CREDENTIALS = new Set(["public", "tenant-key", "operator", "metrics-token", "mcp-token", "console"]);

/**
 * The caller of one of the gateway's own rows (src/routing/own-rows.ts). "public": a valid key or gateway token is the
 * caller (counted by the rate limit), anything else is no reason to refuse. "tenant-key" and "operator": a tenant key
 * (a gateway token is refused with the row's `wrongToken`, else as an unknown key); an operator key may read, an
 * operator-readonly key may not change (403 read_only). "metrics-token": the TOLLGATE_METRICS_TOKEN bearer. "mcp-token":
 * a keyless MCP token stands for its tenant. "console": the console's session cookie (the console answers its absence).
 */
function identifyOwn(services: IdentifyServices, row: RouteRow): MiddlewareHandler<GatewayEnv> {
  const has = (a: string) => row.auth.includes(a as never);
  const open = has("public"),
    operator = has("operator"),
    takesKey = operator || has("tenant-key"),
    takesMcp = has("mcp-token");
  const isMetricsToken = has("metrics-token") ? services.isMetricsToken : undefined;

  async function resolve(c: Context<GatewayEnv>): Promise<Caller> {
    if (has("console")) return consoleCaller(services, c);
    const headers = c.req.raw.headers;
    if (isMetricsToken) {
      const bearer = bearerToken(headers);
      if (bearer && isMetricsToken(bearer)) return { via: "metrics-token" };
    }
    const presented = presentedKey(services.platform, c);
    if (open) {
      // Only to count the request against its tenant: an open row's answer does not depend on it.
      return (await quietly(services, presented ?? c.req.query("token"))) ?? { via: "public" };
    }
    if (looksLikeGatewayToken(presented) && (takesMcp || row.wrongToken)) {
      const wrong = (kind: string) =>
        new GatewayError(row.wrongToken!.status, row.wrongToken!.code, row.wrongToken!.message.replace("{kind}", kind));
      if (!takesMcp) throw wrong("gateway");
      const token = await services.tokens.verify(presented);
      await services.directory.stale();
      const tenant = token.kind === "mcp" ? services.directory.get(token.tenant) : undefined;
      // /mcp says a disabled tenant is disabled; /usage answers it as any token it cannot read with (as it always has).
      if (token.kind === "mcp" && !tenant?.enabled && row.wrongToken?.code !== "tenant_key_required")
        throw new GatewayError(401, "tenant_disabled", "The tenant this token was minted for is disabled.");
      if (!tenant?.enabled || token.cap === undefined) throw wrong(token.kind);
      requireParentKey(token, tenant, services.now());
      tokenReaches(services, c, row, token);
      return { via: "token", tenant, token, presented };
    }
    if (operator) {
      const person = await identityCaller(services, c, presented);
      if (person) return person;
    }
    if (!takesKey) throw new GatewayError(401, "unauthorized", "This route needs a tenant key.");
    const tenant = await services.directory.authenticate(presented);
    if (operator) {
      const { role } = rightsOf({ tenant });
      const reads = c.req.method === "GET" || c.req.method === "HEAD";
      if (role === "readonly" && !reads && !row.readOnlyMay)
        throw new GatewayError(
          403,
          "read_only",
          "This key has the operator-readonly scope: it may read the admin API but not change anything.",
        );
      if (role === "tenant") requireScope(tenant, "admin");
    } else if (row.scope) requireScope(tenant, row.scope);
    return { via: "key", tenant, presented: presented! };
  }

  return async function identifyOwnCaller(c, next) {
    const f = c.get("logFields");
    f.route = row.name;
    let caller: Caller;
    try {
      caller = await resolve(c);
    } catch (err) {
      if (row.bearerChallenge && err instanceof GatewayError && err.status === 401)
        throw new GatewayError(err.status, err.code, err.message, err.details, {
          "www-authenticate": bearerChallenge(c, `${publicOriginOf(c, services)}${row.bearerChallenge}`, err),
        });
      throw err;
    }
    c.set("caller", caller);
    const person = caller.via === "identity" ? caller.identity : caller.via === "console" ? caller.session?.identity : undefined;
    if (person) c.set("actor", actorOf(person));
    if ("tenant" in caller && caller.tenant) {
      c.set("tenant", caller.tenant);
      f.tenant = caller.tenant.id;
    }
    return next();
  };
}

/**
 * The `WWW-Authenticate` challenge of a refused bearer (RFC 6750 §3, RFC 9728 §5.1, MCP authorization): the protected
 * resource metadata's address and the scopes to ask for; a credential that was presented and refused also gets
 * `error="invalid_token"` and, in `error_description`, the gateway's own code (token_revoked, token_expired…) so a
 * client shows the user why. A request with no credential gets no error code, as RFC 6750 asks.
 */
function bearerChallenge(c: Context<GatewayEnv>, metadata: string, err: GatewayError): string {
  const quoted = (v: string) => `"${v.replace(/["\\]/g, "").replace(/[^\x20-\x7e]/g, "")}"`;
  const presented = !!(c.req.header("authorization") || c.req.header("x-api-key"));
  const parts = presented ? [`error="invalid_token"`, `error_description=${quoted(`${err.code}: ${err.message}`)}`] : [];
  parts.push(`resource_metadata=${quoted(metadata)}`, `scope=${quoted(MCP_SCOPES.join(" "))}`);
  return `Bearer ${parts.join(", ")}`;
}

/**
 * A tenant key with `scope`, outside the route table: the admin passthrough (server.adminPassthrough) answers paths no
 * row fronts. Sets the caller as a row's identify would.
 */
export async function identifyKey(services: IdentifyServices, c: Context<GatewayEnv>, scope: Scope): Promise<Tenant> {
  const presented = presentedKey(services.platform, c);
  const tenant = await services.directory.authenticate(presented);
  requireScope(tenant, scope);
  c.set("caller", { via: "key", tenant, presented: presented! });
  c.set("tenant", tenant);
  c.get("logFields").tenant = tenant.id;
  return tenant;
}

/** A key or gateway token when it is valid, else nobody (an open row does not refuse for it). */
async function quietly(services: IdentifyServices, presented: string | undefined): Promise<Caller | undefined> {
  if (!presented) return undefined;
  try {
    if (!looksLikeGatewayToken(presented)) return { via: "key", tenant: await services.directory.authenticate(presented), presented };
    const token = await services.tokens.verify(presented);
    const tenant = services.directory.get(token.tenant);
    return tenant ? { via: "token", tenant, token, presented } : undefined;
  } catch {
    return undefined;
  }
}

/** The console session the cookie names: live only while its tenant is enabled and still holds the key signed in with. */
async function consoleCaller(services: IdentifyServices, c: Context<GatewayEnv>): Promise<Caller> {
  try {
    const id = getCookie(c, SESSION_COOKIE);
    const session = id && /^[A-Za-z0-9_-]{20,64}$/.test(id) ? await sessionById(services, id) : undefined;
    if (!session) return { via: "public" };
    // The snapshot brought up to date first, as for a key: a fresh instance (a restart) still holding its config
    // file's tenants would take a key made or rotated through the API for a dead one, and end a live session.
    const stale = services.directory.stale();
    if (stale) await stale;
    if (session.identity) {
      // Signed in through the identity provider: the role it mapped to, for as long as the session lasts and the
      // provider's word on the person has not changed since (a later sign-in that maps them otherwise ends it).
      if (!(await sessionPersonStands(services, session.identity))) return { via: "console", session };
      const tenant = identityTenant(services.directory, session.identity);
      return tenant ? { via: "console", session, tenant } : { via: "console", session };
    }
    const tenant = services.directory.get(session.tenant);
    const now = services.now();
    const keyLive = tenant?.keys.some((k) => k.hash === session.keyHash && (!k.expiresAt || Date.parse(k.expiresAt) > now));
    return tenant?.enabled && keyLive ? { via: "console", session, tenant } : { via: "console", session };
  } catch (error) {
    return { via: "console", error };
  }
}

/**
 * A person on the admin API: an `Authorization: Bearer` JWT of the OIDC provider ([operators.oidc], apiBearer), or
 * Cloudflare Access's `Cf-Access-Jwt-Assertion` ([operators.access]). undefined: neither is configured or presented
 * (a tenant key is then checked as usual). An identity no role mapping matches gets 403; a tenant user gets 403 (the
 * admin API is for operators); operator-readonly may read only, as its key would.
 */
async function identityCaller(
  services: IdentifyServices,
  c: Context<GatewayEnv>,
  presented: string | undefined,
): Promise<Caller | undefined> {
  const { oidc, access } = services.signIn ?? {};
  const assertion = access ? c.req.header(ACCESS_HEADER) : undefined;
  let verified: Awaited<ReturnType<NonNullable<typeof oidc>["verifyBearer"]>> | undefined;
  if (access && assertion) verified = await access.verify(assertion);
  else if (oidc?.config.apiBearer && looksLikeProviderJwt(presented) && !c.req.header("x-api-key"))
    verified = await oidc.verifyBearer(presented);
  if (!verified) return undefined;
  const who = verified.identity;
  if (!who) throw new GatewayError(403, "no_role", "This identity maps to no role in this gateway (see [operators.oidc.roles]).");
  const { role } = rightsOf({ identity: who });
  if (role === "tenant") throw new GatewayError(403, "missing_scope", "The admin API is for operators; this identity is a tenant user.");
  const reads = c.req.method === "GET" || c.req.method === "HEAD";
  if (role === "readonly" && !reads)
    throw new GatewayError(
      403,
      "read_only",
      "This identity has the operator-readonly role: it may read the admin API but not change anything.",
    );
  return { via: "identity", tenant: identityTenant(services.directory, who)!, identity: who };
}
