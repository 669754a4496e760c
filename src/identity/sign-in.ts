// Sign-in through the company's identity provider (docs/sign-in.md): OIDC authorization code + PKCE for the console
// (oauth4webapi; the ID token's signature checked against the provider's JWKS with jose), the same provider's JWTs as
// bearers on the admin API, and Cloudflare Access's signed `Cf-Access-Jwt-Assertion` on Workers. Roles (admin,
// operator-readonly, tenant) come from the configured claim mappings; an identity no mapping matches gets nothing.
// Web standards only (fetch, WebCrypto): it runs on Workers. The client secret lives in this closure and nowhere else.
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import * as oauth from "oauth4webapi";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import type { AccessConfig, OidcConfig, RoleMapping } from "../../config/operators-schema.js";
import { tenantSchema } from "../../config/tenant-schema.js";
import { GatewayError } from "../errors.js";
import { personTenant, type OperatorRole } from "./roles.js";
import type { Tenant, TenantDirectory } from "./tenants.js";

/** Who signed in through a provider: the subject (`sub`), its role, and for a tenant user its tenant. */
export interface SignedInIdentity {
  via: "oidc" | "access";
  sub: string;
  role: OperatorRole;
  /** The tenant of a tenant user (absent for admin and operator-readonly). */
  tenant?: string;
  /** For the console's header: email or name when the provider gives one. */
  name?: string;
}

/** The audit log's actor for an identity: `oidc:<sub>` or `access:<sub>`. */
export const actorOf = (who: Pick<SignedInIdentity, "via" | "sub">) => `${who.via}:${who.sub}`;

const ROLE_NAMES: Array<[keyof RoleMapping, OperatorRole]> = [
  ["admin", "admin"],
  ["operator-readonly", "readonly"],
  ["tenant", "tenant"],
];

const claimAt = (claims: Record<string, unknown>, path: string): unknown =>
  path.split(".").reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), claims);

/**
 * A rule on an email claim (`email:…`, `profile.email:…`) counts only when the provider vouches the address is the
 * person's: the `email_verified` claim beside it is `true` (OIDC Core §5.1). Anyone can sign up at many providers with
 * an address they do not own. Cloudflare Access is the exception: its assertion's `email` is the identity Access itself
 * authenticated (it signs nothing for an address the person did not prove), so Access emails count as verified.
 */
const isEmailRule = (path: string) => path === "email" || path.endsWith(".email");
const verifiedEmail = (claims: Record<string, unknown>, path: string) => claimAt(claims, `${path}_verified`) === true;

function matches(claims: Record<string, unknown>, rule: string, emailsVerified: boolean): boolean {
  const at = rule.indexOf(":");
  const path = rule.slice(0, at);
  if (isEmailRule(path) && !emailsVerified && !verifiedEmail(claims, path)) return false;
  const value = claimAt(claims, path);
  const want = rule.slice(at + 1);
  const values = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return values.some(
    (v) =>
      (typeof v === "string" || typeof v === "number" || typeof v === "boolean") && (want === "*" ? String(v) !== "" : String(v) === want),
  );
}

/**
 * The role a set of claims maps to (admin before operator-readonly before tenant), or undefined: no mapping matched, or
 * a tenant mapping matched without a `tenantClaim` naming a tenant.
 */
export function roleFromClaims(
  claims: Record<string, unknown>,
  roles: RoleMapping,
  tenantClaim: string,
  /** The issuer authenticated the email itself (Cloudflare Access): no `email_verified` claim is needed. */
  emailsVerified = false,
): { role: OperatorRole; tenant?: string } | undefined {
  for (const [name, role] of ROLE_NAMES) {
    if (!roles[name].some((rule) => matches(claims, rule, emailsVerified))) continue;
    if (role !== "tenant") return { role };
    const tenant = claimAt(claims, tenantClaim);
    return typeof tenant === "string" && tenant ? { role, tenant } : undefined;
  }
  return undefined;
}

/**
 * The tenant an identity acts as: for a tenant user its own (live and enabled, else none), with no operator scope even
 * when the tenant it names holds one (a tenant claim never confers an operator role: roles.ts); for an operator a tenant of
 * its own making that exists nowhere else (`oidc:<sub>`, scope admin or operator-readonly), so every check that reads
 * an operator's scopes reads the role, and no tenant's budget or keys are touched.
 */
export function identityTenant(directory: Pick<TenantDirectory, "get">, who: SignedInIdentity): Tenant | undefined {
  if (who.role === "tenant") {
    const t = who.tenant ? directory.get(who.tenant) : undefined;
    return t?.enabled ? personTenant(t) : undefined;
  }
  return { ...templateTenant(), id: actorOf(who), scopes: [who.role === "admin" ? "admin" : "operator-readonly"], keys: [] };
}

/** A tenant's defaults (no budget, no quotas) for an operator's stand-in; the placeholder key never leaves it. */
const templateTenant = (): Tenant => tenantSchema.parse({ id: "operator", keys: [{ hash: `sha256:${"0".repeat(64)}` }] });

/**
 * A JWT signed with a public-key algorithm: what a provider issues. The gateway's own tokens are JWTs too, but HMAC
 * (HS256), and are left to the token checks.
 */
export function looksLikeProviderJwt(s: string | undefined): s is string {
  if (!s || !/^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(s)) return false;
  try {
    const { alg } = decodeProtectedHeader(s);
    return typeof alg === "string" && /^(RS|PS|ES|Ed)/.test(alg);
  } catch {
    return false;
  }
}

const subjectOf = (claims: JWTPayload): string => {
  if (typeof claims.sub !== "string" || !claims.sub || claims.sub.length > 255)
    throw new GatewayError(401, "invalid_identity_token", "The identity token has no usable subject.");
  return claims.sub;
};
const nameOf = (claims: Record<string, unknown>): string | undefined => {
  const n = claims.email ?? claims.preferred_username ?? claims.name;
  return typeof n === "string" ? n.slice(0, 200) : undefined;
};

/** A loopback issuer may be plain http (tests, a provider on the same host); anything else must be https. */
const isLoopback = (u: URL) => ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);

/** One OIDC authorization in flight: what the callback needs, kept server-side under its `state`. */
export interface PendingSignIn {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** Where the provider was told to send the browser back (the callback checks it is the same). */
  redirectUri: string;
}

export interface OidcSignIn {
  readonly config: OidcConfig;
  /** The provider's authorization URL for a new sign-in, and what to keep until its callback. */
  start(redirectUri: string): Promise<{ url: string; pending: PendingSignIn }>;
  /** The callback: the code exchanged (PKCE, state, nonce checked), the ID token verified, the claims mapped. */
  finish(callbackUrl: URL, pending: PendingSignIn): Promise<{ sub: string; claims: Record<string, unknown>; identity?: SignedInIdentity }>;
  /** An `Authorization: Bearer` JWT of this issuer (audience apiAudience or clientId) mapped to its identity. */
  verifyBearer(token: string): Promise<{ sub: string; identity?: SignedInIdentity }>;
  /** The provider's end_session_endpoint with this client and where to come back, when it advertises one. */
  logoutUrl(postLogoutRedirectUri: string): Promise<string | undefined>;
}

/** The OIDC client of a gateway: discovery on first use (a failure is retried on the next sign-in), then cached. */
export function oidcSignIn(config: OidcConfig, clientSecret: string | undefined): OidcSignIn {
  const issuer = new URL(config.issuer);
  const insecure = issuer.protocol === "http:" && isLoopback(issuer);
  const httpOptions = insecure ? { [oauth.allowInsecureRequests]: true } : {};
  const client: oauth.Client = { client_id: config.clientId };
  const clientAuth = clientSecret ? oauth.ClientSecretBasic(clientSecret) : oauth.None();
  let discovered: Promise<{ as: oauth.AuthorizationServer; jwks: ReturnType<typeof createRemoteJWKSet> }> | undefined;

  const provider = () => {
    discovered ??= (async () => {
      const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...httpOptions }));
      if (!as.jwks_uri) throw new Error("the provider's discovery document has no jwks_uri");
      return { as, jwks: createRemoteJWKSet(new URL(as.jwks_uri)) };
    })();
    return discovered.catch((err) => {
      discovered = undefined;
      throw new GatewayError(
        502,
        "identity_provider_unavailable",
        `The identity provider could not be reached (${oauthProblem(err)}); try again shortly.`,
      );
    });
  };

  const identityOf = (via: "oidc", sub: string, claims: Record<string, unknown>): SignedInIdentity | undefined => {
    const mapped = roleFromClaims(claims, config.roles, config.tenantClaim);
    return mapped ? { via, sub, ...mapped, name: nameOf(claims) } : undefined;
  };

  return {
    config,
    async start(redirectUri) {
      const { as } = await provider();
      const codeVerifier = oauth.generateRandomCodeVerifier();
      const pending: PendingSignIn = { state: oauth.generateRandomState(), nonce: oauth.generateRandomNonce(), codeVerifier, redirectUri };
      const url = new URL(as.authorization_endpoint!);
      url.searchParams.set("client_id", config.clientId);
      url.searchParams.set("redirect_uri", redirectUri);
      url.searchParams.set("response_type", "code");
      url.searchParams.set("scope", config.scopes.join(" "));
      url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(codeVerifier));
      url.searchParams.set("code_challenge_method", "S256");
      url.searchParams.set("state", pending.state);
      url.searchParams.set("nonce", pending.nonce);
      return { url: url.href, pending };
    },

    async finish(callbackUrl, pending) {
      const { as, jwks } = await provider();
      let claims: Record<string, unknown>;
      let sub: string;
      try {
        const params = oauth.validateAuthResponse(as, client, callbackUrl, pending.state);
        const response = await oauth.authorizationCodeGrantRequest(
          as,
          client,
          clientAuth,
          params,
          pending.redirectUri,
          pending.codeVerifier,
          httpOptions,
        );
        const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
          expectedNonce: pending.nonce,
          requireIdToken: true,
        });
        // oauth4webapi checked the ID token's claims (iss, aud, exp, nonce); its signature is checked here too.
        const verified = await jwtVerify(result.id_token!, jwks, { issuer: as.issuer, audience: config.clientId });
        sub = subjectOf(verified.payload);
        claims = { ...verified.payload };
        // Groups and custom claims often come only from userinfo; the ID token's own claims win over it.
        if (as.userinfo_endpoint && result.access_token) {
          const info = await oauth.processUserInfoResponse(
            as,
            client,
            sub,
            await oauth.userInfoRequest(as, client, result.access_token, httpOptions),
          );
          claims = { ...info, ...claims };
        }
      } catch (err) {
        if (err instanceof GatewayError) throw err;
        throw new GatewayError(401, "sign_in_failed", `Sign-in with the identity provider failed: ${oauthProblem(err)}.`);
      }
      return { sub, claims, identity: identityOf("oidc", sub, claims) };
    },

    async verifyBearer(token) {
      const { as, jwks } = await provider();
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, jwks, { issuer: as.issuer, audience: config.apiAudience ?? config.clientId }));
      } catch {
        throw new GatewayError(401, "invalid_identity_token", "This bearer is not a valid token of the configured identity provider.");
      }
      const sub = subjectOf(payload);
      return { sub, identity: identityOf("oidc", sub, payload) };
    },

    async logoutUrl(postLogoutRedirectUri) {
      const { as } = await provider();
      if (!as.end_session_endpoint) return undefined;
      const url = new URL(as.end_session_endpoint);
      url.searchParams.set("client_id", config.clientId);
      url.searchParams.set("post_logout_redirect_uri", postLogoutRedirectUri);
      return url.href;
    },
  };
}

/** What went wrong in an OAuth exchange, in words safe to show (an error code and description, never a token). */
function oauthProblem(err: unknown): string {
  if (err instanceof oauth.AuthorizationResponseError || err instanceof oauth.ResponseBodyError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ""}`.slice(0, 300);
  if (err instanceof Error) return (err.message || err.name).slice(0, 300);
  return "unknown error";
}

export interface AccessSignIn {
  /** The `Cf-Access-Jwt-Assertion` verified (team domain's certs, issuer and AUD) and mapped. */
  verify(assertion: string): Promise<{ sub: string; identity?: SignedInIdentity }>;
}

/** The team domain as an origin: "myteam.cloudflareaccess.com" → https://myteam.cloudflareaccess.com. */
const accessOrigin = (teamDomain: string) => (/^https?:\/\//.test(teamDomain) ? new URL(teamDomain).origin : `https://${teamDomain}`);

/** Cloudflare Access's signed JWT, verified against `<team domain>/cdn-cgi/access/certs` (keys cached and refreshed by jose). */
export function accessSignIn(config: AccessConfig, fallback?: Pick<OidcConfig, "roles" | "tenantClaim">): AccessSignIn {
  const origin = accessOrigin(config.teamDomain);
  const jwks = createRemoteJWKSet(new URL(`${origin}/cdn-cgi/access/certs`));
  const roles = config.roles ?? fallback?.roles ?? { admin: [], "operator-readonly": [], tenant: [] };
  const tenantClaim = config.tenantClaim ?? fallback?.tenantClaim ?? "tenant";
  return {
    async verify(assertion) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(assertion, jwks, { issuer: origin, audience: config.aud }));
      } catch {
        throw new GatewayError(
          401,
          "invalid_access_token",
          "The Cf-Access-Jwt-Assertion is not a valid token of the configured Access team.",
        );
      }
      const sub = subjectOf(payload);
      const mapped = roleFromClaims(payload, roles, tenantClaim, true);
      return { sub, identity: mapped ? { via: "access", sub, ...mapped, name: nameOf(payload) } : undefined };
    },
  };
}

/** The header Cloudflare Access sets on every request it lets through. */
export const ACCESS_HEADER = "cf-access-jwt-assertion";

/** The person Cloudflare Access vouches for on this request (its signed header), or undefined without one. */
export async function accessPerson(
  access: AccessSignIn | undefined,
  c: Context,
): Promise<Awaited<ReturnType<AccessSignIn["verify"]>> | undefined> {
  const assertion = access ? c.req.header(ACCESS_HEADER) : undefined;
  if (!access || !assertion) return undefined;
  return access.verify(assertion);
}

/** The `state` a sign-in in flight left in its browser (the cookie that binds the provider's callback to it). */
export const pendingSignInState = (c: Context, cookie: string): string | undefined => getCookie(c, cookie);
