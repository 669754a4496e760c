// The authorization request (GET /authorize): every parameter read once and checked (client, redirect URI, PKCE,
// scopes, resource), then kept pending behind the consent page (./page.tsx), whose form ./consent.ts takes. The page's
// own sign-in through the identity provider starts and returns here too.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { RowHandler } from "../routing/handlers.js";
import { MCP_SCOPES } from "../identity/tokens.js";
import { toolsByScope } from "./tools.js";
import type { OAuthClient } from "../state/oauth.js";
import { OAuthError } from "./errors.js";
import { redirectMatches, redirectTrusted, resolveClient } from "./clients.js";
import { ConsentPage, oauthHtml as html, type ConsentView } from "./page.js";
import { peekConsentTicket, type ConsentTicket } from "./oidc-consent.js";
import { startProviderSignIn } from "../identity/provider-sign-in.js";
import { clientAddressOf } from "../web/forwarded.js";
import type { OAuthContext } from "./context.js";
import { errorPage, one, randomToken, redirectTo, refusedHere } from "./http.js";

/** A pending authorization request waits this long for its consent. */
const PENDING_TTL_MS = 15 * 60_000;
/** Consent pages one client address may open per minute (each keeps a pending request for PENDING_TTL_MS). */
const AUTHORIZE_PER_MINUTE = 120;
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43,128}$/;
/** A pending request's id, as the page's form and the provider's callback carry it. */
export const PENDING_ID = /^[A-Za-z0-9_-]{20,64}$/;

/** The authorization request as checked on the consent page, kept until its form is posted. */
export interface PendingRequest {
  csrf: string;
  clientId: string;
  clientName: string;
  verifiedHost?: string;
  redirectUri: string;
  state?: string;
  codeChallenge: string;
  scopes: string[];
  resource: string;
}

/** The authorization request's parameters, each at most once (RFC 6749 §3.1); a repeated one is invalid_request. */
function paramsOf(q: URLSearchParams) {
  const resources = q.getAll("resource");
  if (resources.length > 1) throw new OAuthError(400, "invalid_target", "One resource per request.");
  return {
    clientId: one(q, "client_id") ?? "",
    redirectUri: one(q, "redirect_uri"),
    state: one(q, "state"),
    responseType: one(q, "response_type"),
    challenge: one(q, "code_challenge"),
    method: one(q, "code_challenge_method"),
    scope: one(q, "scope"),
    resource: resources[0] || undefined,
  };
}

async function checkRequest(
  ctx: OAuthContext,
  c: Context,
  q: URLSearchParams,
): Promise<{ pending: PendingRequest; client: OAuthClient } | Response> {
  const { services, config, store, origin, resourceOk } = ctx;
  let client: OAuthClient;
  let redirectUri: string;
  let p: ReturnType<typeof paramsOf>;
  try {
    p = paramsOf(q);
    client = await resolveClient(store, config, p.clientId, services.now(), services.destinations);
    if (p.redirectUri === undefined) {
      if (client.redirectUris.length !== 1) throw new OAuthError(400, "invalid_request", "redirect_uri is required.");
      redirectUri = client.redirectUris[0]!;
    } else if (!redirectMatches(client, p.redirectUri)) {
      throw new OAuthError(400, "invalid_request", "redirect_uri is not one of the client's registered redirect URIs.");
    } else redirectUri = p.redirectUri;
  } catch (err) {
    if (err instanceof OAuthError) return refusedHere(c, err);
    throw err;
  }
  const { state } = p;
  const trusted = redirectTrusted(client, redirectUri);
  const back = (error: string, description: string) =>
    trusted
      ? redirectTo(redirectUri, { error, error_description: description, state, iss: origin(c) })
      : refusedHere(c, new OAuthError(400, error, description));
  try {
    if (p.responseType !== "code") return back("unsupported_response_type", 'response_type must be "code".');
    const { challenge, method } = p;
    if (!challenge) return back("invalid_request", "code_challenge is required (PKCE with S256).");
    if (method !== "S256") return back("invalid_request", "code_challenge_method must be S256 (plain is not accepted).");
    if (!CODE_CHALLENGE.test(challenge)) return back("invalid_request", "code_challenge is not a base64url S256 digest.");
    // The gateway's operator scopes are never granted; scopes it does not know (openid, offline_access, a host's own)
    // are ignored (RFC 6749 §3.3), so a client asking for them still connects with what it may have.
    const asked = (p.scope ?? "").split(" ").filter(Boolean);
    const operator = asked.filter((s) => s === "admin" || s === "operator-readonly");
    if (operator.length)
      return back("invalid_scope", `${operator.join(", ")} cannot be granted to a client (this server offers ${MCP_SCOPES.join(", ")}).`);
    const requested = asked.filter((s) => (MCP_SCOPES as readonly string[]).includes(s));
    const resource = p.resource ?? `${origin(c)}/mcp`;
    if (!resourceOk(c, resource)) return back("invalid_target", `This server issues tokens for ${origin(c)}/mcp only.`);
    const verifiedHost = client.via === "metadata-document" ? new URL(client.clientId).host : undefined;
    return {
      client,
      pending: {
        csrf: randomToken(),
        clientId: client.clientId,
        clientName: client.clientName ?? verifiedHost ?? "An unnamed client",
        ...(verifiedHost ? { verifiedHost } : {}),
        redirectUri,
        ...(state !== undefined ? { state } : {}),
        codeChallenge: challenge,
        scopes: requested.length ? [...new Set(requested)] : [...MCP_SCOPES],
        resource,
      },
    };
  } catch (err) {
    if (err instanceof OAuthError) return back(err.error, err.description);
    throw err;
  }
}

/** What the consent page shows for a pending request (`extra`: a message, what was typed, who signed in). */
export function consentView(ctx: OAuthContext, id: string, p: PendingRequest, extra: Partial<ConsentView> = {}): ConsentView {
  const oidc = ctx.services.signIn?.oidc;
  const signedInTenant = extra.signedIn ? ctx.services.directory.get(extra.signedIn.tenant) : undefined;
  return {
    ...(signedInTenant ? { agentPolicies: Object.keys(signedInTenant.agentPolicies ?? {}) } : {}),
    request: id,
    csrf: p.csrf,
    clientName: p.clientName,
    clientId: p.clientId,
    ...(p.verifiedHost ? { verifiedHost: p.verifiedHost } : {}),
    redirectHost: new URL(p.redirectUri).host || p.redirectUri,
    scopes: p.scopes,
    tools: toolsByScope(),
    defaultDays: ctx.config.defaultGrantDays,
    maxDays: ctx.config.maxGrantDays,
    ...(oidc ? { provider: new URL(oidc.config.issuer).host } : {}),
    ...extra,
  };
}

/** The page's signed-in state from a consent ticket. */
export const signedInView = (ticket: string, t: ConsentTicket): Partial<ConsentView> => ({
  signedIn: { ticket, tenant: t.tenant, who: t.name ?? t.actor },
});

/**
 * The consent page's own sign-in through the identity provider: `?request=<id>&signin=oidc` starts it (bound to the
 * pending request), `?request=<id>&ticket=<t>` is where its callback sends the browser back.
 */
async function providerSignIn(ctx: OAuthContext, c: Context<GatewayEnv>, q: URLSearchParams): Promise<Response> {
  const { services, store } = ctx;
  const id = q.get("request") ?? "";
  const raw = PENDING_ID.test(id) ? await store.getPending(id) : undefined;
  if (!raw) return errorPage(400, "This request has expired", "Go back to the application and connect again.");
  if (q.get("signin") === "oidc") {
    if (!services.signIn?.oidc) return errorPage(404, "Not available", "No identity provider is configured here ([operators.oidc]).");
    return startProviderSignIn(services, c, id);
  }
  const ticket = q.get("ticket") ?? "";
  const t = await peekConsentTicket(services, ticket, id);
  if (!t) return errorPage(400, "This sign-in has expired", "Go back to the application and connect again.");
  return html(ConsentPage(consentView(ctx, id, JSON.parse(raw) as PendingRequest, signedInView(ticket, t))), 200);
}

/** GET /authorize: the request checked and kept pending, and the consent page for it (bounded per client address). */
export function authorizationPage(ctx: OAuthContext): RowHandler {
  const { services, config, store } = ctx;
  const addressOf = clientAddressOf(services);
  return async function authorizationPage(c) {
    if (!config.enabled) return errorPage(404, "Not available", "This gateway runs no authorization server.");
    // Each page keeps a pending request for a while: bounded per client address.
    const limit = await services.stores.rateLimiter.hit(
      `oauth-authorize:${addressOf(c) ?? "unknown"}`,
      AUTHORIZE_PER_MINUTE,
      60_000,
      services.now(),
    );
    if (!limit.allowed) return errorPage(429, "Too many sign-in pages", "Wait a minute and connect again.");
    const query = new URL(c.req.url).searchParams;
    if (query.has("request") && !query.has("client_id")) return providerSignIn(ctx, c, query);
    const checked = await checkRequest(ctx, c, query);
    if (checked instanceof Response) return checked;
    const id = randomToken(24);
    await store.putPending(id, JSON.stringify(checked.pending), PENDING_TTL_MS);
    return html(ConsentPage(consentView(ctx, id, checked.pending)), 200);
  };
}
