// The token endpoint (the code exchange with PKCE, refresh with rotation: a rotated token used again revokes the
// grant) and RFC 7009 revocation. Access tokens are the gateway's keyless MCP tokens carrying the grant.
import type { Context } from "hono";
import type { RowHandler } from "../routing/handlers.js";
import { MCP_SCOPES, looksLikeGatewayToken } from "../identity/tokens.js";
import type { OAuthGrant } from "../state/oauth.js";
import { OAuthError } from "./errors.js";
import { revokeGrant } from "./grants.js";
import type { OAuthContext } from "./context.js";
import { formOf, one, randomToken, sameSecret, sha256url } from "./http.js";

const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export function tokenHandlers(ctx: OAuthContext): { token: RowHandler; revoke: RowHandler } {
  const { services, config, store, origin, resourceOk, oauth } = ctx;

  // ── The token endpoint ──
  /** Mints the grant's next pair: an access token (a capped keyless MCP token of the grant) and a rotated refresh token. */
  async function issue(c: Context, grant: OAuthGrant) {
    const now = services.now();
    const ttl = Math.min(config.accessTokenTtlSeconds ?? services.config.tokens.ttlSeconds, Math.floor((grant.expiresAt - now) / 1000));
    if (ttl < 1) throw new OAuthError(400, "invalid_grant", "This grant has expired.");
    const access = await services.tokens.mint({
      tenant: grant.tenant,
      kind: "mcp",
      scopes: grant.scopes as (typeof MCP_SCOPES)[number][],
      cap: BigInt(grant.cap),
      ttlSeconds: ttl,
      keyless: true,
      grant: grant.id,
      capWindow: grant.capWindow,
      aud: grant.resource,
      ...(grant.tools ? { tools: grant.tools } : {}),
    });
    const refresh = `tgr_${randomToken()}`;
    await store.putRefresh(await sha256url(refresh), grant.id, Math.max(1000, grant.expiresAt - now));
    services.logger.info("oauth token issued", { requestId: c.get("requestId"), tenant: grant.tenant, grant: grant.id, jti: access.jti });
    return {
      access_token: access.token,
      token_type: "Bearer",
      expires_in: ttl,
      refresh_token: refresh,
      scope: grant.scopes.join(" "),
    };
  }

  /** The grant's tenant must still be enabled and hold every scope the grant gives. */
  function tenantStillAllows(grant: Pick<OAuthGrant, "tenant" | "scopes">) {
    const tenant = services.directory.get(grant.tenant);
    if (!tenant?.enabled) throw new OAuthError(400, "invalid_grant", "The tenant this grant is for is disabled.");
    const lacking = grant.scopes.filter((s) => !(tenant.scopes as string[]).includes(s));
    if (lacking.length) throw new OAuthError(400, "invalid_grant", `The tenant no longer has the scope ${lacking.join(", ")}.`);
  }

  async function exchangeCode(c: Context, form: URLSearchParams) {
    const code = one(form, "code");
    const clientId = one(form, "client_id");
    const verifier = one(form, "code_verifier");
    const redirectUri = one(form, "redirect_uri");
    const resource = one(form, "resource");
    if (!code) throw new OAuthError(400, "invalid_request", "code is required.");
    if (!clientId) throw new OAuthError(400, "invalid_request", "client_id is required (public clients identify themselves).");
    if (!verifier) throw new OAuthError(400, "invalid_request", "code_verifier is required (PKCE).");
    if (!CODE_VERIFIER.test(verifier))
      throw new OAuthError(400, "invalid_request", "code_verifier must be 43 to 128 unreserved characters.");
    const used = await store.useCode(await sha256url(code));
    if (!used) throw new OAuthError(400, "invalid_grant", "This authorization code is unknown or has expired.");
    if (used.replayed) {
      // RFC 6749 §4.1.2: a code used twice revokes what it granted.
      await revokeGrant(services, store, used.grantId, "authorization code replayed");
      throw new OAuthError(400, "invalid_grant", "This authorization code was already used; the grant it made is revoked.");
    }
    const rec = used.code;
    if (rec.clientId !== clientId) throw new OAuthError(400, "invalid_grant", "This code was issued to another client.");
    if (redirectUri !== rec.redirectUri)
      throw new OAuthError(400, "invalid_grant", "redirect_uri does not match the authorization request's.");
    if (!sameSecret(await sha256url(verifier), rec.codeChallenge))
      throw new OAuthError(400, "invalid_grant", "code_verifier does not match the code_challenge.");
    if (resource !== undefined && resource !== rec.resource && !(resourceOk(c, resource) && resourceOk(c, rec.resource)))
      throw new OAuthError(400, "invalid_target", `This code was issued for ${rec.resource}.`);
    if (resource !== undefined && !resourceOk(c, resource))
      throw new OAuthError(400, "invalid_target", `This server issues tokens for ${origin(c)}/mcp only.`);
    tenantStillAllows(rec);
    const now = services.now();
    const { redirectUri: _r, codeChallenge: _c, grantId, ...consent } = rec;
    const grant: OAuthGrant = { ...consent, id: grantId, createdAt: now, refreshedAt: now, issued: 1 };
    await store.putGrant(grant, true);
    return issue(c, grant);
  }

  async function refresh(c: Context, form: URLSearchParams) {
    const token = one(form, "refresh_token");
    const clientId = one(form, "client_id");
    const resource = one(form, "resource");
    const scope = one(form, "scope");
    if (!token) throw new OAuthError(400, "invalid_request", "refresh_token is required.");
    if (!clientId) throw new OAuthError(400, "invalid_request", "client_id is required (public clients identify themselves).");
    const digest = /^tgr_[A-Za-z0-9_-]{43}$/.test(token) ? await sha256url(token) : undefined;
    const grantId = digest ? await store.refreshGrant(digest) : undefined;
    if (!digest || !grantId) throw new OAuthError(400, "invalid_grant", "This refresh token is unknown or has expired.");
    // The client is checked before the token is used: another client presenting it uses nothing up.
    const grant = await store.getGrant(grantId);
    if (!grant || grant.clientId !== clientId) throw new OAuthError(400, "invalid_grant", "This refresh token belongs to another client.");
    const used = await store.useRefresh(digest);
    if (!used) throw new OAuthError(400, "invalid_grant", "This refresh token is unknown or has expired.");
    if (used.reused) {
      // A rotated refresh token came back: one of its holders is not the client. The whole grant ends.
      await revokeGrant(services, store, grant.id, "refresh token reused");
      throw new OAuthError(400, "invalid_grant", "This refresh token was already used; the grant is revoked.");
    }
    if (grant.revokedAt) throw new OAuthError(400, "invalid_grant", "This grant has been revoked.");
    if (grant.expiresAt <= services.now()) throw new OAuthError(400, "invalid_grant", "This grant has expired.");
    if (resource !== undefined && !resourceOk(c, resource))
      throw new OAuthError(400, "invalid_target", `This grant's tokens are for ${grant.resource}.`);
    if (scope !== undefined) {
      const wider = scope.split(" ").filter((s) => (MCP_SCOPES as readonly string[]).includes(s) && !grant.scopes.includes(s));
      if (wider.length) throw new OAuthError(400, "invalid_scope", `This grant does not include: ${wider.join(", ")}.`);
    }
    tenantStillAllows(grant);
    const next: OAuthGrant = { ...grant, refreshedAt: services.now(), issued: grant.issued + 1 };
    await store.putGrant(next, false);
    return issue(c, next);
  }

  const token: RowHandler = oauth(async (c) => {
    const form = await formOf(c);
    const type = one(form, "grant_type");
    let answer: Awaited<ReturnType<typeof issue>>;
    if (type === "authorization_code") answer = await exchangeCode(c, form);
    else if (type === "refresh_token") answer = await refresh(c, form);
    else if (!type) throw new OAuthError(400, "invalid_request", "grant_type is required.");
    else throw new OAuthError(400, "unsupported_grant_type", 'grant_type must be "authorization_code" or "refresh_token".');
    return c.json(answer, 200, { "cache-control": "no-store", pragma: "no-cache" });
  });

  // ── RFC 7009 revocation: a refresh token ends its grant; an access token ends itself. Unknown tokens: 200 ──
  const revoke: RowHandler = oauth(async (c) => {
    const form = await formOf(c);
    const value = one(form, "token");
    const clientId = one(form, "client_id");
    if (!value) throw new OAuthError(400, "invalid_request", "token is required.");
    if (/^tgr_[A-Za-z0-9_-]{43}$/.test(value)) {
      const grantId = await store.refreshGrant(await sha256url(value));
      const grant = grantId ? await store.getGrant(grantId) : undefined;
      if (grant && (!clientId || clientId === grant.clientId)) await revokeGrant(services, store, grant.id, "revoked by the client");
    } else if (looksLikeGatewayToken(value)) {
      const t = await services.tokens.inspect(value);
      if (t?.grant) {
        const grant = await store.getGrant(t.grant);
        if (grant && (!clientId || clientId === grant.clientId)) await services.tokens.revoke(t.jti, t.exp);
      }
    }
    return c.body(null, 200, { "cache-control": "no-store" });
  });

  return { token, revoke };
}
