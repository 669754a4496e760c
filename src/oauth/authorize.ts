// The authorization request and the consent page: the request checked (client, redirect URI, PKCE, scopes, resource)
// and kept pending; the page, its sign-in (a tenant key, a one-time console link, or the identity provider's ticket);
// the posted form checked, then a single-use code bound to the PKCE challenge and sent back to the client.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { RowHandler } from "../routing/handlers.js";
import { MCP_SCOPES, type McpScope } from "../identity/tokens.js";
import { toolsByScope } from "./tools.js";
import { signInKey } from "../identity/resources.js";
import type { Tenant } from "../identity/tenants.js";
import { redeemLink } from "../console/link.js";
import { usdAmount } from "../../config/fields.js";
import { usdToAtomic } from "../payments/index.js";
import type { OAuthClient, OAuthCode } from "../state/oauth.js";
import { OAuthError } from "./errors.js";
import { redirectMatches, resolveClient } from "./clients.js";
import { ConsentPage, oauthHtml as html, type ConsentView } from "./page.js";
import { peekConsentTicket, takeConsentTicket, type ConsentTicket } from "./oidc-consent.js";
import { startProviderSignIn } from "../console/sign-in.js";
import { audit } from "../operators/actions/tenant-changes.js";
import { clientAddressOf } from "../platform/forwarded.js";
import type { OAuthContext } from "./context.js";
import { errorPage, formOf, one, randomToken, redirectTo, sameSecret, sha256url } from "./http.js";

/** A pending authorization request waits this long for its consent. */
const PENDING_TTL_MS = 15 * 60_000;
/** Consent pages one client address may open per minute (each keeps a pending request for PENDING_TTL_MS). */
const AUTHORIZE_PER_MINUTE = 120;
const CAP_WINDOWS = ["daily", "monthly", "total"] as const;
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43,128}$/;

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

export function authorizeHandlers(ctx: OAuthContext): { authorizePage: RowHandler; authorize: RowHandler } {
  const { services, config, store, origin, resourceOk } = ctx;
  const addressOf = clientAddressOf(services);
  const oidc = services.signIn?.oidc;

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

  return { authorizePage, authorize };
}
