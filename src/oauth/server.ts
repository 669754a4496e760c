// The gateway's OAuth 2.1 authorization server (Web standards only: it runs on Node and on Workers). Agents connect
// with a link: an MCP client discovers it from /mcp's protected-resource metadata (RFC 9728), identifies itself with a
// client ID metadata document or a dynamic registration (RFC 7591), and sends the tenant to the consent page
// (authorization code with PKCE S256). The tenant signs in there and picks the scopes, a spend cap with its window, and
// an expiry: the grant. Its access tokens are the gateway's keyless MCP tokens carrying the grant (cap counted under
// the grant, fleet-wide revocation), bound to their resource (RFC 8707); its refresh tokens rotate, and a rotated one
// used again revokes the whole grant. Revocation (RFC 7009), `iss` on the authorization response (RFC 9207).
import type { GatewayServices } from "../services.js";
import type { RowHandler } from "../routing/handlers.js";
import { MCP_SCOPES } from "../identity/tokens.js";
import { OAuthError } from "./errors.js";
import { registerClient } from "./clients.js";
import { jsonBody } from "../routing/json-body.js";
import { clientAddressOf } from "../web/forwarded.js";
import { oauthContext, type OAuthContext } from "./context.js";
import { FORM_LIMIT } from "./http.js";
import { authorizationPage } from "./authorize.js";
import { consentDecision } from "./consent.js";
import { revocationEndpoint, tokenEndpoint } from "./token.js";

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

/** GET /.well-known/oauth-authorization-server: RFC 8414 metadata. */
function metadataEndpoint(ctx: OAuthContext): RowHandler {
  const { config, origin, oauth } = ctx;
  return oauth(async function metadataEndpoint(c) {
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
}

/** POST /register: RFC 7591 registration, bounded per address per hour and per fleet per day; registrations expire. */
function registrationEndpoint(ctx: OAuthContext): RowHandler {
  const { services, config, store, oauth } = ctx;
  const addressOf = clientAddressOf(services);
  return oauth(async function registrationEndpoint(c) {
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
}

/** The OAuth rows' handlers: one named handler per endpoint. */
export function oauthHandlers(services: GatewayServices): Record<string, RowHandler> {
  const ctx = oauthContext(services);
  return {
    "oauth.metadata": metadataEndpoint(ctx),
    "oauth.register": registrationEndpoint(ctx),
    "oauth.authorize.page": authorizationPage(ctx),
    "oauth.authorize": consentDecision(ctx),
    "oauth.token": tokenEndpoint(ctx),
    "oauth.revoke": revocationEndpoint(ctx),
  };
}
