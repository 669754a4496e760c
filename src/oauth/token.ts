// The token endpoint (the code exchange with PKCE, refresh with rotation) and RFC 7009 revocation. Access tokens are
// the gateway's keyless MCP tokens carrying the grant. Every input is checked before anything is used up: a code or a
// refresh token is consumed only by the request that is issued the next pair, so a refused request (a wrong verifier, a
// wider scope, another resource) leaves it for the natural retry. Refreshes presenting one refresh token within
// oauth.refreshGraceSeconds of its first use (a host's parallel calls at an access token's expiry) get the pair that
// first use issued, fleet-wide; a use after that window is a reuse, and the whole grant is revoked.
import type { Context } from "hono";
import type { RowHandler } from "../routing/handlers.js";
import { MCP_SCOPES, looksLikeGatewayToken } from "../identity/tokens.js";
import { holdsKey } from "../identity/lineage.js";
import { mayConsentFor, readStanding } from "../identity/persons.js";
import type { OAuthGrant } from "../state/oauth.js";
import type { AgentPolicy } from "../../config/tenant-schema.js";
import { OAuthError } from "./errors.js";
import { revokeGrant } from "./grants.js";
import { lostRightReason, standingUntil } from "./person-grants.js";
import { requireKnownClient, touchClient } from "./clients.js";
import type { OAuthContext } from "./context.js";
import { formOf, one, randomToken, sameSecret, seal, sha256url, tokenClient, unseal } from "./http.js";

const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const REFRESH_TOKEN = /^tgr_[A-Za-z0-9_-]{43}$/;
/** How often a concurrent twin of a refresh looks for the answer its first use is writing. */
const TWIN_POLL_MS = 20;

/** The token endpoint's answer (RFC 6749 §5.1). */
interface TokenAnswer {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Mints the grant's next pair: an access token (a capped keyless MCP token of the grant) and a rotated refresh token.
 * `until`: the moment (epoch ms) the grant's parents let it mint until (a person's grant: their standing's), which no
 * access token outlives.
 */
async function issuePair(ctx: OAuthContext, c: Context, grant: OAuthGrant, until = Number.POSITIVE_INFINITY): Promise<TokenAnswer> {
  const { services, config, store } = ctx;
  const now = services.now();
  const ttl = Math.min(
    config.accessTokenTtlSeconds ?? services.config.tokens.ttlSeconds,
    Math.floor((Math.min(grant.expiresAt, until) - now) / 1000),
  );
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
    ...(grant.parentKey ? { parentKey: grant.parentKey } : {}),
    ...(grant.agentPolicy ? { policy: grantPolicy(services.directory.get(grant.tenant), grant.agentPolicy) } : {}),
  });
  const refresh = `tgr_${randomToken()}`;
  await store.putRefresh(await sha256url(refresh), grant.id, Math.max(1000, grant.expiresAt - now));
  await touchClient(store, config, grant.clientId);
  services.logger.info("oauth token issued", { requestId: c.get("requestId"), tenant: grant.tenant, grant: grant.id, jti: access.jti });
  return { access_token: access.token, token_type: "Bearer", expires_in: ttl, refresh_token: refresh, scope: grant.scopes.join(" ") };
}

/**
 * The rules of the agent policy a grant was consented with, as its tenant declares them now (an operator's edit applies
 * from the next refresh). A policy removed since: the grant cannot mint (fail closed, never a token without it).
 */
function grantPolicy(tenant: { agentPolicies?: Record<string, AgentPolicy> } | undefined, name: string): AgentPolicy {
  const policy = tenant?.agentPolicies && Object.hasOwn(tenant.agentPolicies, name) ? tenant.agentPolicies[name] : undefined;
  if (!policy)
    throw new OAuthError(
      400,
      "invalid_grant",
      `The agent policy "${name}" this grant was consented with no longer exists; ask the tenant again.`,
    );
  return policy;
}

/**
 * The grant's parents still stand: its tenant is enabled and holds every scope the grant gives, and the key that
 * consented is still the tenant's, or the person who did is still its user by the provider's recent word. A grant whose
 * key is gone, or whose person lost the right, is revoked (it can never work again); one whose person's word is too old
 * is refused until they sign in again. The moment (epoch ms) the parents let it mint until.
 */
async function requireParents(
  ctx: OAuthContext,
  grant: Pick<OAuthGrant, "tenant" | "scopes" | "parentKey" | "agentPolicy" | "person"> & { id: string },
  isGrant: boolean,
): Promise<number> {
  const { services, store } = ctx;
  let tenant = services.directory.get(grant.tenant);
  // This instance's snapshot may not know yet a key made on another instance a moment ago (the consent went there):
  // before a parent is taken for gone, and the grant revoked for it, the snapshot is read anew from the fleet's store.
  if (grant.parentKey !== undefined && !holdsKey(tenant, grant.parentKey, services.now())) {
    await services.tenantSync.refresh();
    tenant = services.directory.get(grant.tenant);
  }
  if (!tenant?.enabled) throw new OAuthError(400, "invalid_grant", "The tenant this grant is for is disabled.");
  if (grant.parentKey !== undefined && !holdsKey(tenant, grant.parentKey, services.now())) {
    if (isGrant) await revokeGrant(services, store, grant.id, "the consenting key was revoked");
    throw new OAuthError(400, "invalid_grant", "The tenant key that consented to this grant has been revoked; ask the tenant again.");
  }
  const lacking = grant.scopes.filter((s) => !(tenant.scopes as string[]).includes(s));
  if (lacking.length) throw new OAuthError(400, "invalid_grant", `The tenant no longer has the scope ${lacking.join(", ")}.`);
  if (grant.agentPolicy !== undefined) grantPolicy(tenant, grant.agentPolicy);
  return grant.person === undefined ? Number.POSITIVE_INFINITY : await requirePerson(ctx, grant, isGrant);
}

/** A person's grant: the provider's last word on them still makes them the tenant's user, and is recent enough. */
async function requirePerson(ctx: OAuthContext, grant: { id: string; tenant: string; person?: string }, isGrant: boolean) {
  const { services, store, config } = ctx;
  const person = grant.person!;
  const standing = await readStanding(services, person);
  if (standing && !mayConsentFor(standing, grant.tenant)) {
    if (isGrant) await revokeGrant(services, store, grant.id, lostRightReason(person, grant.tenant));
    throw new OAuthError(
      400,
      "invalid_grant",
      `The person who consented to this grant (${person}) no longer may consent for tenant ${grant.tenant}; ask the tenant again.`,
    );
  }
  const until = standing ? standingUntil(standing, config.personReconfirmSeconds) : 0;
  if (until <= services.now())
    throw new OAuthError(
      400,
      "invalid_grant",
      `The person who consented to this grant (${person}) has not signed in through the identity provider for ${config.personReconfirmSeconds} s (oauth.personReconfirmSeconds); once they sign in again (the console or a consent page), this refresh works.`,
    );
  return until;
}

/** The token request's client: named, and known here (else invalid_client, so the host registers again). */
async function knownClient(ctx: OAuthContext, c: Context, form: URLSearchParams): Promise<string> {
  const { config, store } = ctx;
  const { clientId, basic } = tokenClient(c, form);
  if (!clientId) throw new OAuthError(400, "invalid_request", "client_id is required (public clients identify themselves).");
  await requireKnownClient(store, config, clientId, basic);
  return clientId;
}

/** grant_type=authorization_code: everything checked against the code's record, then the code used up, once. */
async function exchangeCode(ctx: OAuthContext, c: Context, form: URLSearchParams): Promise<TokenAnswer> {
  const { services, store, origin, resourceOk } = ctx;
  const code = one(form, "code");
  const verifier = one(form, "code_verifier");
  const redirectUri = one(form, "redirect_uri");
  const resource = one(form, "resource");
  if (!code) throw new OAuthError(400, "invalid_request", "code is required.");
  if (!verifier) throw new OAuthError(400, "invalid_request", "code_verifier is required (PKCE).");
  if (!CODE_VERIFIER.test(verifier)) throw new OAuthError(400, "invalid_request", "code_verifier must be 43 to 128 unreserved characters.");
  const clientId = await knownClient(ctx, c, form);
  const digest = await sha256url(code);
  const rec = await store.peekCode(digest);
  let until = Number.POSITIVE_INFINITY;
  if (rec) {
    if (rec.clientId !== clientId) throw new OAuthError(400, "invalid_grant", "This code was issued to another client.");
    if (redirectUri !== rec.redirectUri)
      throw new OAuthError(400, "invalid_grant", "redirect_uri does not match the authorization request's.");
    if (!sameSecret(await sha256url(verifier), rec.codeChallenge))
      throw new OAuthError(400, "invalid_grant", "code_verifier does not match the code_challenge.");
    if (resource !== undefined && resource !== rec.resource && !(resourceOk(c, resource) && resourceOk(c, rec.resource)))
      throw new OAuthError(400, "invalid_target", `This code was issued for ${rec.resource}.`);
    if (resource !== undefined && !resourceOk(c, resource))
      throw new OAuthError(400, "invalid_target", `This server issues tokens for ${origin(c)}/mcp only.`);
    until = await requireParents(ctx, { ...rec, id: rec.grantId }, false);
  }
  // Only now is the code used up (fleet-wide, once); a code gone already is a replay of a good exchange.
  const used = await store.useCode(digest);
  if (!used) throw new OAuthError(400, "invalid_grant", "This authorization code is unknown or has expired.");
  if (used.replayed) {
    // RFC 6749 §4.1.2: a code used twice revokes what it granted.
    await revokeGrant(services, store, used.grantId, "authorization code replayed");
    throw new OAuthError(400, "invalid_grant", "This authorization code was already used; the grant it made is revoked.");
  }
  const now = services.now();
  const { redirectUri: _r, codeChallenge: _c, grantId, ...consent } = used.code;
  const grant: OAuthGrant = { ...consent, id: grantId, createdAt: now, refreshedAt: now, issued: 1 };
  await store.putGrant(grant, true);
  return issuePair(ctx, c, grant, until);
}

/** A concurrent twin's answer: the pair the first use issued (sealed under the refresh token), waited for briefly. */
async function twinAnswer(ctx: OAuthContext, token: string, digest: string, usedAt: number): Promise<TokenAnswer | undefined> {
  const { services, store } = ctx;
  const graceMs = ctx.config.refreshGraceSeconds * 1000;
  const until = usedAt + graceMs;
  for (;;) {
    const sealed = await store.getRefreshAnswer(digest);
    const opened = sealed ? await unseal(token, sealed) : undefined;
    if (opened) return JSON.parse(opened) as TokenAnswer;
    if (services.now() >= until) return undefined;
    await sleep(TWIN_POLL_MS);
  }
}

/** grant_type=refresh_token: the grant and the request checked, then the token rotated (or its twin answered). */
async function refreshGrant(ctx: OAuthContext, c: Context, form: URLSearchParams): Promise<TokenAnswer> {
  const { services, store, resourceOk } = ctx;
  const graceMs = ctx.config.refreshGraceSeconds * 1000;
  const token = one(form, "refresh_token");
  const resource = one(form, "resource");
  const scope = one(form, "scope");
  if (!token) throw new OAuthError(400, "invalid_request", "refresh_token is required.");
  const clientId = await knownClient(ctx, c, form);
  const digest = REFRESH_TOKEN.test(token) ? await sha256url(token) : undefined;
  const grantId = digest ? await store.refreshGrant(digest) : undefined;
  if (!digest || !grantId) throw new OAuthError(400, "invalid_grant", "This refresh token is unknown or has expired.");
  const grant = await store.getGrant(grantId);
  // Another client presenting it uses nothing up.
  if (!grant || grant.clientId !== clientId) throw new OAuthError(400, "invalid_grant", "This refresh token belongs to another client.");
  if (grant.revokedAt) throw new OAuthError(400, "invalid_grant", "This grant has been revoked.");
  if (grant.expiresAt <= services.now()) throw new OAuthError(400, "invalid_grant", "This grant has expired.");
  if (resource !== undefined && !resourceOk(c, resource))
    throw new OAuthError(400, "invalid_target", `This grant's tokens are for ${grant.resource}.`);
  if (scope !== undefined) {
    const wider = scope.split(" ").filter((s) => (MCP_SCOPES as readonly string[]).includes(s) && !grant.scopes.includes(s));
    if (wider.length) throw new OAuthError(400, "invalid_scope", `This grant does not include: ${wider.join(", ")}.`);
  }
  const until = await requireParents(ctx, grant, true);
  // Everything holds: now the token is used (once, fleet-wide).
  const now = services.now();
  const used = await store.useRefresh(digest, now);
  if (!used) throw new OAuthError(400, "invalid_grant", "This refresh token is unknown or has expired.");
  if (used.reused) {
    const twin = now - used.usedAt <= graceMs ? await twinAnswer(ctx, token, digest, used.usedAt) : undefined;
    if (twin) {
      services.logger.info("oauth refresh answered within the grace window", { requestId: c.get("requestId"), grant: grant.id });
      return twin;
    }
    // A rotated refresh token came back after the window: one of its holders is not the client. The whole grant ends.
    await revokeGrant(services, store, grant.id, "refresh token reused");
    throw new OAuthError(400, "invalid_grant", "This refresh token was already used; the grant is revoked.");
  }
  const next: OAuthGrant = { ...grant, refreshedAt: now, issued: grant.issued + 1 };
  await store.putGrant(next, false);
  const answer = await issuePair(ctx, c, next, until);
  if (graceMs > 0) await store.putRefreshAnswer(digest, await seal(token, JSON.stringify(answer)), graceMs + 1000);
  return answer;
}

/** POST /token: the code exchange and the refresh, in OAuth's error shape. */
export function tokenEndpoint(ctx: OAuthContext): RowHandler {
  return ctx.oauth(async function tokenEndpoint(c) {
    const form = await formOf(c);
    const type = one(form, "grant_type");
    let answer: TokenAnswer;
    if (type === "authorization_code") answer = await exchangeCode(ctx, c, form);
    else if (type === "refresh_token") answer = await refreshGrant(ctx, c, form);
    else if (!type) throw new OAuthError(400, "invalid_request", "grant_type is required.");
    else throw new OAuthError(400, "unsupported_grant_type", 'grant_type must be "authorization_code" or "refresh_token".');
    return c.json(answer, 200, { "cache-control": "no-store", pragma: "no-cache" });
  });
}

// ── RFC 7009 revocation: a refresh token ends its grant; an access token ends itself. Unknown tokens: 200 ──
export function revocationEndpoint(ctx: OAuthContext): RowHandler {
  const { services, store } = ctx;
  return ctx.oauth(async function revocationEndpoint(c) {
    const form = await formOf(c);
    const value = one(form, "token");
    const { clientId } = tokenClient(c, form);
    if (!value) throw new OAuthError(400, "invalid_request", "token is required.");
    if (REFRESH_TOKEN.test(value)) {
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
}
