// The gateway's OAuth 2.1 authorization server (Web standards only: it runs on Node and on Workers). Agents connect
// with a link: an MCP client discovers it from /mcp's protected-resource metadata (RFC 9728), identifies itself with a
// client ID metadata document or a dynamic registration (RFC 7591), and sends the tenant to the consent page
// (authorization code with PKCE S256). The tenant signs in there and picks the scopes, a spend cap with its window, and
// an expiry: the grant. Its access tokens are the gateway's keyless MCP tokens carrying the grant (cap counted under
// the grant, fleet-wide revocation), bound to their resource (RFC 8707); its refresh tokens rotate, and a rotated one
// used again revokes the whole grant. Revocation (RFC 7009), `iss` on the authorization response (RFC 9207).
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { RowHandler } from "../routing/handlers.js";
import { publicOriginOf } from "../platform/public-origin.js";
import { MCP_SCOPES, looksLikeGatewayToken, type McpScope } from "../identity/tokens.js";
import { toolsByScope } from "./tools.js";
import { signInKey } from "../identity/resources.js";
import type { Tenant } from "../identity/tenants.js";
import { redeemLink } from "../console/link.js";
import { usdAmount } from "../../config/fields.js";
import { usdToAtomic } from "../payments/money.js";
import { kvOAuthStore, type OAuthClient, type OAuthCode, type OAuthGrant, type OAuthStore } from "../state/oauth.js";
import { OAuthError, oauthErrorResponse } from "./errors.js";
import { redirectMatches, registerClient, resolveClient } from "./clients.js";
import { ConsentPage, OAuthErrorPage, oauthHtml, type ConsentView } from "./page.js";
import { peekConsentTicket, takeConsentTicket, type ConsentTicket } from "./oidc-consent.js";
import { startProviderSignIn } from "../console/sign-in.js";
import { revokeGrant } from "./grants.js";
import { audit } from "../operators/actions/tenant-changes.js";
import { jsonBody } from "../routing/json-body.js";
import { clientAddressOf } from "../platform/forwarded.js";

/** A pending authorization request waits this long for its consent. */
const PENDING_TTL_MS = 15 * 60_000;
/** Consent pages one client address may open per minute (each keeps a pending request for PENDING_TTL_MS). */
const AUTHORIZE_PER_MINUTE = 120;
/** Form and token requests are small. */
const FORM_LIMIT = 16 * 1024;
const CAP_WINDOWS = ["daily", "monthly", "total"] as const;
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43,128}$/;
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** The authorization request as checked on the consent page, kept until its form is posted. */
interface PendingRequest {
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

function randomToken(bytes = 32): string {
  let bin = "";
  for (const b of crypto.getRandomValues(new Uint8Array(bytes))) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** SHA-256, base64url: codes and refresh tokens are kept only as this; PKCE's S256 is the same function. */
async function sha256url(s: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  let bin = "";
  for (const b of d) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Equal strings in time that does not depend on where they differ. */
function sameSecret(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/** The redirect URI with the authorization response's parameters (RFC 9207: `iss` too). */
function redirectTo(uri: string, params: Record<string, string | undefined>): Response {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return new Response(null, { status: 302, headers: { location: u.href, "cache-control": "no-store" } });
}

const html = oauthHtml;
const errorPage = (status: number, title: string, message: string) => html(OAuthErrorPage({ title, message }), status);

/** Form fields (application/x-www-form-urlencoded), repeated ones kept; anything else is invalid_request. */
async function formOf(c: Context): Promise<URLSearchParams> {
  const type = c.req.header("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded"))
    throw new OAuthError(400, "invalid_request", "Send the parameters as application/x-www-form-urlencoded.");
  const { text } = await jsonlessBody(c);
  return new URLSearchParams(text);
}

/** The raw body, bounded (a form is not JSON: read as text). */
async function jsonlessBody(c: Context): Promise<{ text: string }> {
  const len = Number(c.req.header("content-length") ?? "0");
  if (len > FORM_LIMIT) throw new OAuthError(400, "invalid_request", `The request body is larger than ${FORM_LIMIT} bytes.`);
  const text = await c.req.text();
  if (text.length > FORM_LIMIT) throw new OAuthError(400, "invalid_request", `The request body is larger than ${FORM_LIMIT} bytes.`);
  return { text };
}

/** One parameter, refused when repeated (RFC 6749 §3.1: parameters must not be included more than once). */
function one(form: URLSearchParams, name: string): string | undefined {
  const all = form.getAll(name);
  if (all.length > 1) throw new OAuthError(400, "invalid_request", `${name} is repeated.`);
  return all[0] === "" ? undefined : all[0];
}

/** The paths a browser-based OAuth client reads or posts to from another origin (its preflights are answered). */
export const OAUTH_CORS_PATHS = [
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
  "/register",
  "/token",
  "/revoke",
];

/** A CORS preflight to one of OAUTH_CORS_PATHS: any origin, no credentials. */
export function oauthPreflight(): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-origin": "*",
      "access-control-allow-methods": "GET, POST",
      "access-control-allow-headers": "content-type, authorization, mcp-protocol-version",
      "access-control-max-age": "600",
    },
  });
}

export function oauthHandlers(services: GatewayServices): Record<string, RowHandler> {
  const config = services.config.oauth;
  const store: OAuthStore = kvOAuthStore(services.stores.kv);
  const addressOf = clientAddressOf(services);
  const oidc = services.signIn?.oidc;

  const origin = (c: Context) => publicOriginOf(c, services);
  /** The resources a token may be for: the MCP endpoint, or the gateway as a whole (its origin). */
  const resourceOk = (c: Context, r: string) => {
    const o = origin(c);
    return r === `${o}/mcp` || r === o || r === `${o}/`;
  };
  const enabled = () => {
    if (!config.enabled) throw new OAuthError(404, "not_found", "This gateway runs no authorization server (oauth.enabled = false).");
  };

  /**
   * Wraps a handler: OAuth errors answer in OAuth's shape, never a 500 for a client's mistake. Readable from any origin
   * (browser-based clients such as the MCP Inspector run the flow in a page; no cookie is involved).
   */
  const oauth =
    (fn: (c: Context<GatewayEnv>) => Promise<Response>): RowHandler =>
    async (c) => {
      let res: Response;
      try {
        enabled();
        res = await fn(c);
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        res = oauthErrorResponse(err);
      }
      res.headers.set("access-control-allow-origin", "*");
      return res;
    };

  // ── RFC 8414 metadata ──
  const metadata: RowHandler = oauth(async (c) => {
    const o = origin(c);
    return c.json(
      {
        issuer: o,
        authorization_endpoint: `${o}/authorize`,
        token_endpoint: `${o}/token`,
        ...(config.registration.enabled ? { registration_endpoint: `${o}/register` } : {}),
        revocation_endpoint: `${o}/revoke`,
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        scopes_supported: [...MCP_SCOPES],
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: config.clientMetadataDocuments.enabled,
        resource_indicators_supported: true,
        service_documentation: `${o}/_tollgate/docs`,
      },
      200,
      { "cache-control": "public, max-age=300" },
    );
  });

  // ── RFC 7591 registration: bounded per address per hour and per fleet per day; registrations expire ──
  const register: RowHandler = oauth(async (c) => {
    if (!config.registration.enabled)
      throw new OAuthError(404, "not_found", "Dynamic client registration is off here; use a client ID metadata document.");
    const now = services.now();
    const address = addressOf(c) ?? "unknown";
    const perAddress = await services.stores.rateLimiter.hit(
      `oauth-register:${address}`,
      config.registration.perAddressPerHour,
      3_600_000,
      now,
    );
    if (!perAddress.allowed)
      throw new OAuthError(429, "too_many_registrations", "Too many client registrations from this address; try again within the hour.");
    let body: unknown;
    try {
      body = (await jsonBody(c, services.platform, FORM_LIMIT)).json;
    } catch {
      throw new OAuthError(400, "invalid_client_metadata", "The registration must be a JSON object (RFC 7591).");
    }
    const day = new Date(now).toISOString().slice(0, 10);
    if ((await store.count(`register:${day}`, 2 * 86_400_000)) > config.registration.maxPerDay)
      throw new OAuthError(429, "too_many_registrations", "This gateway has taken all the client registrations it takes today.");
    return c.json(await registerClient(store, config, body, now), 201, { "cache-control": "no-store" });
  });

  // ── The authorization request: checked, then the consent page ──
  /**
   * Checks an authorization request. Before its client and redirect URI are known good, a problem is a page (nothing
   * may be sent to an unchecked address); after, it goes back to the client as `error=` on its redirect URI.
   */
  async function checkRequest(c: Context, q: URLSearchParams): Promise<{ pending: PendingRequest; client: OAuthClient } | Response> {
    let client: OAuthClient;
    let redirectUri: string;
    try {
      client = await resolveClient(store, config, one(q, "client_id") ?? "", services.now());
      const presented = one(q, "redirect_uri");
      if (presented === undefined) {
        if (client.redirectUris.length !== 1) throw new OAuthError(400, "invalid_request", "redirect_uri is required.");
        redirectUri = client.redirectUris[0]!;
      } else if (!redirectMatches(client, presented)) {
        throw new OAuthError(400, "invalid_request", "redirect_uri is not one of the client's registered redirect URIs.");
      } else redirectUri = presented;
    } catch (err) {
      if (err instanceof OAuthError) return errorPage(400, "This sign-in link cannot be used", `${err.error}: ${err.description}`);
      throw err;
    }
    const state = one(q, "state");
    const back = (error: string, description: string) =>
      redirectTo(redirectUri, { error, error_description: description, state, iss: origin(c) });
    try {
      if (one(q, "response_type") !== "code") return back("unsupported_response_type", 'response_type must be "code".');
      const challenge = one(q, "code_challenge");
      const method = one(q, "code_challenge_method");
      if (!challenge) return back("invalid_request", "code_challenge is required (PKCE with S256).");
      if (method !== "S256") return back("invalid_request", "code_challenge_method must be S256 (plain is not accepted).");
      if (!CODE_CHALLENGE.test(challenge)) return back("invalid_request", "code_challenge is not a base64url S256 digest.");
      // The gateway's operator scopes are never granted; scopes it does not know (openid, offline_access, a host's own)
      // are ignored (RFC 6749 §3.3), so a client asking for them still connects with what it may have.
      const asked = (one(q, "scope") ?? "").split(" ").filter(Boolean);
      const operator = asked.filter((s) => s === "admin" || s === "operator-readonly");
      if (operator.length)
        return back("invalid_scope", `${operator.join(", ")} cannot be granted to a client (this server offers ${MCP_SCOPES.join(", ")}).`);
      const requested = asked.filter((s) => (MCP_SCOPES as readonly string[]).includes(s));
      const resources = q.getAll("resource");
      if (resources.length > 1) return back("invalid_target", "One resource per request.");
      const resource = resources[0] || `${origin(c)}/mcp`;
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

  const view = (id: string, p: PendingRequest, extra: Partial<ConsentView> = {}): ConsentView => ({
    request: id,
    csrf: p.csrf,
    clientName: p.clientName,
    clientId: p.clientId,
    ...(p.verifiedHost ? { verifiedHost: p.verifiedHost } : {}),
    redirectHost: new URL(p.redirectUri).host || p.redirectUri,
    scopes: p.scopes,
    tools: toolsByScope(),
    defaultDays: config.defaultGrantDays,
    maxDays: config.maxGrantDays,
    ...(oidc ? { provider: new URL(oidc.config.issuer).host } : {}),
    ...extra,
  });
  /** The page's signed-in state from a consent ticket. */
  const signedInView = (ticket: string, t: ConsentTicket): Partial<ConsentView> => ({
    signedIn: { ticket, tenant: t.tenant, who: t.name ?? t.actor },
  });

  /**
   * The consent page's own sign-in through the identity provider: `?request=<id>&signin=oidc` starts it (the console's
   * OIDC flow, bound to the pending request), `?request=<id>&ticket=<t>` is where its callback sends the browser back.
   */
  async function providerSignIn(c: Context<GatewayEnv>, q: URLSearchParams): Promise<Response> {
    const id = q.get("request") ?? "";
    const raw = /^[A-Za-z0-9_-]{20,64}$/.test(id) ? await store.getPending(id) : undefined;
    if (!raw) return errorPage(400, "This request has expired", "Go back to the application and connect again.");
    if (q.get("signin") === "oidc") {
      if (!oidc) return errorPage(404, "Not available", "No identity provider is configured here ([operators.oidc]).");
      return startProviderSignIn(services, c, id);
    }
    const ticket = q.get("ticket") ?? "";
    const t = await peekConsentTicket(services, ticket, id);
    if (!t) return errorPage(400, "This sign-in has expired", "Go back to the application and connect again.");
    return html(ConsentPage(view(id, JSON.parse(raw) as PendingRequest, signedInView(ticket, t))), 200);
  }

  const authorizePage: RowHandler = async (c) => {
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
    if (query.has("request") && !query.has("client_id")) return providerSignIn(c, query);
    const checked = await checkRequest(c, query);
    if (checked instanceof Response) return checked;
    const id = randomToken(24);
    await store.putPending(id, JSON.stringify(checked.pending), PENDING_TTL_MS);
    return html(ConsentPage(view(id, checked.pending)), 200);
  };

  /** The tenant a credential signs in: a tenant key, or a one-time console link (its URL or its code). */
  async function signIn(credential: string): Promise<Tenant | undefined> {
    if (!credential) return undefined;
    try {
      return await signInKey(services, credential);
    } catch {
      // not a key: maybe a link
    }
    let code = credential;
    try {
      code = new URL(credential).searchParams.get("code") ?? credential;
    } catch {
      // a bare code
    }
    const link = await redeemLink(services, code);
    const tenant = link ? services.directory.get(link.tenant) : undefined;
    if (!link || !tenant?.enabled || !tenant.keys.some((k) => k.hash === link.keyHash)) return undefined;
    return tenant;
  }

  const authorize: RowHandler = async (c) => {
    if (!config.enabled) return errorPage(404, "Not available", "This gateway runs no authorization server.");
    let form: URLSearchParams;
    try {
      form = await formOf(c);
    } catch {
      return errorPage(400, "This form could not be read", "Reload the page and try again.");
    }
    const id = form.get("request") ?? "";
    const raw = /^[A-Za-z0-9_-]{20,64}$/.test(id) ? await store.getPending(id) : undefined;
    if (!raw) return errorPage(400, "This request has expired", "Go back to the application and connect again.");
    const p = JSON.parse(raw) as PendingRequest;
    if (!sameSecret(form.get("_csrf") ?? "", p.csrf))
      return errorPage(403, "This form was not sent from its own page", "Reload the page and try again.");
    const iss = origin(c);
    if (form.get("action") === "deny") {
      if ((await store.takePending(id)) === undefined)
        return errorPage(400, "This request has expired", "Go back to the application and connect again.");
      return redirectTo(p.redirectUri, {
        error: "access_denied",
        error_description: "The tenant denied the request.",
        state: p.state,
        iss,
      });
    }
    const chosen = {
      scopes: form.getAll("scope"),
      tools: form.getAll("tool"),
      toolsShown: form.get("tools_shown") === "1",
      cap: (form.get("cap") ?? "").trim(),
      window: form.get("window") ?? "",
      days: form.get("days") ?? "",
    };
    // Signed in through the identity provider: its ticket (checked again, and used up, once the form is good).
    const ticket = form.get("ticket") ?? "";
    const viaProvider = ticket ? await peekConsentTicket(services, ticket, id) : undefined;
    if (ticket && !viaProvider) return errorPage(400, "This sign-in has expired", "Go back to the application and connect again.");
    const signedInExtra = viaProvider ? signedInView(ticket, viaProvider) : {};
    const again = (status: number, message: string) => html(ConsentPage(view(id, p, { message, chosen, ...signedInExtra })), status);
    // Everything the form alone decides first: a one-time link is used up by the sign-in, so it comes last.
    const scopes = [...new Set(chosen.scopes)];
    if (scopes.length === 0) return again(400, "Pick at least one thing it may do.");
    const notAsked = scopes.filter((s) => !p.scopes.includes(s));
    if (notAsked.length) return again(400, `The client did not ask for: ${notAsked.join(", ")}.`);
    if (!usdAmount.safeParse(chosen.cap).success || usdToAtomic(chosen.cap) <= 0n)
      return again(400, 'cap: expected a USD amount above 0, like "5.00".');
    const window = CAP_WINDOWS.find((w) => w === chosen.window);
    if (!window) return again(400, "window: choose day, month or the grant's whole life.");
    // The tools within the chosen scopes (a form without the tool boxes allows them all); all of them: no list.
    const offered = scopes.flatMap((s) => toolsByScope()[s as McpScope] ?? []);
    const picked = offered.filter((t) => chosen.tools.includes(t));
    if (chosen.toolsShown && offered.length > 0 && picked.length === 0) return again(400, "Pick at least one tool.");
    const tools = chosen.toolsShown && picked.length < offered.length ? picked : undefined;
    const days = Number(chosen.days);
    if (!Number.isInteger(days) || days < 1 || days > config.maxGrantDays)
      return again(400, `days: a whole number from 1 to ${config.maxGrantDays}.`);
    const fromTicket = viaProvider ? services.directory.get(viaProvider.tenant) : undefined;
    const tenant = viaProvider ? (fromTicket?.enabled ? fromTicket : undefined) : await signIn((form.get("credential") ?? "").trim());
    if (!tenant) return again(401, viaProvider ? `Tenant "${viaProvider.tenant}" is not live here.` : "That key or link cannot sign in.");
    const lacking = scopes.filter((s) => !(tenant.scopes as string[]).includes(s));
    if (lacking.length) return again(403, `Tenant "${tenant.id}" does not have the scope ${lacking.join(", ")}.`);
    if (viaProvider && !(await takeConsentTicket(services, ticket, id)))
      return errorPage(400, "This sign-in has expired", "Go back to the application and connect again.");
    if ((await store.takePending(id)) === undefined)
      return errorPage(400, "This request has expired", "Go back to the application and connect again.");
    const now = services.now();
    const code = randomToken();
    const record: OAuthCode = {
      grantId: `grt_${randomToken(18)}`,
      tenant: tenant.id,
      clientId: p.clientId,
      clientName: p.clientName,
      redirectHost: new URL(p.redirectUri).host || new URL(p.redirectUri).protocol,
      redirectUri: p.redirectUri,
      codeChallenge: p.codeChallenge,
      scopes,
      ...(tools ? { tools } : {}),
      cap: usdToAtomic(chosen.cap).toString(),
      capWindow: window,
      resource: p.resource,
      expiresAt: now + days * 86_400_000,
    };
    await store.putCode(await sha256url(code), record, config.codeTtlSeconds * 1000);
    services.logger.info("oauth consent", { requestId: c.get("requestId"), tenant: tenant.id, client: p.clientId, grant: record.grantId });
    if (viaProvider)
      await audit(
        services,
        { tenant: tenant.id, person: viaProvider.actor, requestId: c.get("requestId") },
        "grant.consent",
        `grant:${tenant.id}/${record.grantId}`,
        undefined,
        { via: "oidc", client: p.clientId, scopes, cap: chosen.cap, capWindow: window },
      );
    return redirectTo(p.redirectUri, { code, state: p.state, iss });
  };

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

  return {
    "oauth.metadata": metadata,
    "oauth.register": register,
    "oauth.authorize.page": authorizePage,
    "oauth.authorize": authorize,
    "oauth.token": token,
    "oauth.revoke": revoke,
  };
}
