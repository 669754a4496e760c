// OAuth clients: a client ID metadata document (the client_id is an https URL; its JSON names the client and its
// redirect URIs), or a dynamic registration (RFC 7591) as the fallback. Public clients only (PKCE, no secret). Redirect
// URIs compare exactly, but a loopback one (127.0.0.1, [::1], localhost over http) matches on any port (RFC 8252 §7.3).
import type { TollgateConfig } from "../../config/schema.js";
import type { OAuthClient, OAuthStore } from "../state/oauth.js";
import { OAuthError } from "./errors.js";
import { type DestinationGuard, DestinationUnreachable } from "../web/destination-guard.js";

type OAuthConfig = TollgateConfig["oauth"];

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);
/** Schemes a redirect may never use (a page's script, a local file, inline data). */
const FORBIDDEN_SCHEMES = new Set(["javascript:", "data:", "file:", "blob:", "vbscript:", "about:"]);
const MAX_REDIRECT_URIS = 10;
const MAX_NAME = 200;

function parseUrl(s: unknown): URL | undefined {
  if (typeof s !== "string" || s.length > 2000) return undefined;
  try {
    return new URL(s);
  } catch {
    return undefined;
  }
}

const isLoopbackHttp = (u: URL) => u.protocol === "http:" && LOOPBACK.has(u.hostname);

/** Why a redirect URI cannot be registered, or undefined when it can (https, loopback http, or an app's own scheme). */
function redirectProblem(raw: unknown): string | undefined {
  const u = parseUrl(raw);
  if (!u) return "is not an absolute URL";
  if (u.hash) return "must not carry a fragment";
  if (FORBIDDEN_SCHEMES.has(u.protocol)) return `may not use ${u.protocol}`;
  if (u.protocol === "http:" && !isLoopbackHttp(u)) return "may use http only on a loopback address (127.0.0.1, [::1], localhost)";
  return undefined;
}

/** Whether `presented` is one of the client's redirect URIs: the same string, or a loopback one on another port. */
export function redirectMatches(client: OAuthClient, presented: string): boolean {
  if (client.redirectUris.includes(presented)) return true;
  const p = parseUrl(presented);
  if (!p || !isLoopbackHttp(p)) return false;
  return client.redirectUris.some((r) => {
    const u = parseUrl(r);
    return !!u && isLoopbackHttp(u) && u.hostname === p.hostname && u.pathname === p.pathname && u.search === p.search;
  });
}

/** The client metadata a registration or a metadata document declares, checked; the first problem is thrown. */
function clientFromMetadata(doc: unknown, clientId: string, via: OAuthClient["via"], now: number): OAuthClient {
  const bad = (description: string) => new OAuthError(400, "invalid_client_metadata", description);
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw bad("The client metadata must be a JSON object.");
  const m = doc as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0)
    throw new OAuthError(400, "invalid_redirect_uri", "redirect_uris: at least one is required.");
  if (uris.length > MAX_REDIRECT_URIS) throw new OAuthError(400, "invalid_redirect_uri", `redirect_uris: at most ${MAX_REDIRECT_URIS}.`);
  uris.forEach((u, i) => {
    const problem = redirectProblem(u);
    if (problem) throw new OAuthError(400, "invalid_redirect_uri", `redirect_uris[${i}] ${problem}.`);
  });
  const auth = m.token_endpoint_auth_method;
  if (via === "metadata-document" && auth !== undefined && auth !== "none")
    throw bad('token_endpoint_auth_method: this server takes public clients only ("none", with PKCE).');
  const grants = m.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || grants.some((g) => g !== "authorization_code" && g !== "refresh_token")))
    throw bad('grant_types: only "authorization_code" and "refresh_token" are supported.');
  const responses = m.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || responses.some((r) => r !== "code")))
    throw bad('response_types: only "code" is supported.');
  const name = typeof m.client_name === "string" ? m.client_name.slice(0, MAX_NAME) : undefined;
  const uri = parseUrl(m.client_uri);
  return {
    clientId,
    ...(name ? { clientName: name } : {}),
    ...(uri && (uri.protocol === "https:" || uri.protocol === "http:") ? { clientUri: uri.href } : {}),
    redirectUris: uris as string[],
    via,
    createdAt: now,
  };
}

/** A registration's answer (RFC 7591 §3.2.1). */
function registrationAnswer(client: OAuthClient, expiresAt: number) {
  return {
    client_id: client.clientId,
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    client_secret_expires_at: 0,
    registration_expires_at: Math.floor(expiresAt / 1000),
    redirect_uris: client.redirectUris,
    ...(client.clientName ? { client_name: client.clientName } : {}),
    ...(client.clientUri ? { client_uri: client.clientUri } : {}),
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
  };
}

const randomId = (prefix: string) => {
  let hex = "";
  for (const b of crypto.getRandomValues(new Uint8Array(16))) hex += b.toString(16).padStart(2, "0");
  return `${prefix}${hex}`;
};

/** Registers a client (RFC 7591). The caller has counted it against the limits. */
export async function registerClient(store: OAuthStore, config: OAuthConfig, body: unknown, now: number) {
  const client = clientFromMetadata(body, randomId("tgc_"), "registration", now);
  const ttlMs = config.registration.ttlDays * 86_400_000;
  await store.putClient(client, ttlMs);
  return registrationAnswer(client, now + ttlMs);
}

/** Whether a client_id names a metadata document (an https URL with a path; http loopback when config allows it). */
function metadataDocumentUrl(config: OAuthConfig, clientId: string): URL | undefined {
  if (!config.clientMetadataDocuments.enabled) return undefined;
  const u = parseUrl(clientId);
  if (!u || u.pathname === "/" || u.hash || u.username || u.password) return undefined;
  if (u.protocol === "https:") {
    // Not an address inside the gateway's own network: a client's document lives on the public web.
    if (LOOPBACK.has(u.hostname) || /^\d+\.\d+\.\d+\.\d+$/.test(u.hostname) || u.hostname.startsWith("[")) return undefined;
    return u;
  }
  return config.clientMetadataDocuments.allowHttpLoopback && isLoopbackHttp(u) ? u : undefined;
}

/**
 * Fetches and checks a client's metadata document through the destination guard (src/web/destination-guard.ts:
 * the name resolved and every address checked, no private or local range unless the loopback is allowed for tests,
 * connected to the address checked, no redirect, bounded in time and size). Whatever kept the document from coming back
 * (refused, unknown, closed, silent, not 200) is one message, so a client learns nothing of what listens where.
 */
async function fetchMetadataDocument(config: OAuthConfig, url: URL, now: number, guard: DestinationGuard): Promise<OAuthClient> {
  const cfg = config.clientMetadataDocuments;
  const loopback = cfg.allowHttpLoopback && isLoopbackHttp(url);
  let doc: unknown;
  try {
    const res = await guard.fetch({
      url: url.href,
      headers: new Headers({ accept: "application/json" }),
      timeoutMs: cfg.timeoutMs,
      maxBytes: cfg.maxBytes,
      policy: { allowHttp: loopback, allowCidrs: loopback ? ["127.0.0.0/8", "::1/128"] : [] },
    });
    if (res.status !== 200) throw new DestinationUnreachable(`it answered HTTP ${res.status}`);
    doc = JSON.parse(new TextDecoder().decode(res.body));
  } catch (err) {
    const why =
      err instanceof SyntaxError ? "it is not JSON" : err instanceof DestinationUnreachable ? err.message : "it could not be read";
    throw new OAuthError(400, "invalid_client", `The client's metadata document at ${url.href} could not be read: ${why}.`);
  }
  if ((doc as { client_id?: unknown })?.client_id !== url.href)
    throw new OAuthError(400, "invalid_client", "The client's metadata document must name its own URL as client_id.");
  try {
    return clientFromMetadata(doc, url.href, "metadata-document", now);
  } catch (err) {
    if (err instanceof OAuthError) throw new OAuthError(400, "invalid_client", `The client's metadata document: ${err.description}`);
    throw err;
  }
}

/**
 * The client a client_id names: a registration, or a metadata document (fetched, then kept `cacheSeconds` for the
 * fleet). @throws OAuthError invalid_client when it names none.
 */
export async function resolveClient(
  store: OAuthStore,
  config: OAuthConfig,
  clientId: string,
  now: number,
  guard: DestinationGuard,
): Promise<OAuthClient> {
  if (!clientId || clientId.length > 2000) throw new OAuthError(400, "invalid_client", "client_id is missing.");
  const url = metadataDocumentUrl(config, clientId);
  if (!url) {
    const client = /^tgc_[0-9a-f]{32}$/.test(clientId) && config.registration.enabled ? await store.getClient(clientId) : undefined;
    if (client?.via !== "registration")
      throw new OAuthError(
        400,
        "invalid_client",
        "Unknown client_id: register the client (POST /register) or use its metadata document URL.",
      );
    return client;
  }
  const cached = await store.getClient(url.href);
  if (cached?.via === "metadata-document") return cached;
  const client = await fetchMetadataDocument(config, url, now, guard);
  if (config.clientMetadataDocuments.cacheSeconds > 0) await store.putClient(client, config.clientMetadataDocuments.cacheSeconds * 1000);
  return client;
}

/**
 * The client a token request names, known without fetching anything: a live registration, or a metadata document's
 * URL (its grant was consented for that URL). @throws OAuthError invalid_client (RFC 6749 §5.2): 401 with a
 * `WWW-Authenticate` challenge when the client authenticated with HTTP Basic, else 400. A host that gets it registers
 * again (the MCP SDK, mcp-remote).
 */
export async function requireKnownClient(store: OAuthStore, config: OAuthConfig, clientId: string, basic: boolean): Promise<void> {
  if (metadataDocumentUrl(config, clientId)) return;
  const client = /^tgc_[0-9a-f]{32}$/.test(clientId) && config.registration.enabled ? await store.getClient(clientId) : undefined;
  if (client?.via === "registration") return;
  throw new OAuthError(
    basic ? 401 : 400,
    "invalid_client",
    "This client is unknown here (its registration expired or was forgotten): register again (POST /register).",
    basic ? { "www-authenticate": 'Basic realm="tollgate"' } : {},
  );
}

/** A registered client that was just issued a token lives on for another registration.ttlDays from now. */
export async function touchClient(store: OAuthStore, config: OAuthConfig, clientId: string): Promise<void> {
  if (!/^tgc_/.test(clientId)) return;
  const client = await store.getClient(clientId);
  if (client?.via === "registration") await store.putClient(client, config.registration.ttlDays * 86_400_000);
}

/**
 * Whether an error may be sent back to this redirect URI without the user's say (RFC 9700 §4.11.2: an authorization
 * server must not be an open redirector). Trusted: a loopback one (it stays on the user's machine, RFC 8252), an app's
 * own scheme (it opens an app, not a page), or an https one on the host of the client's metadata document (that host
 * vouches for it). An https URI a registration merely declared is not: anyone may register any.
 */
export function redirectTrusted(client: OAuthClient, uri: string): boolean {
  const u = parseUrl(uri);
  if (!u) return false;
  if (isLoopbackHttp(u)) return true;
  if (u.protocol !== "https:" && u.protocol !== "http:") return true;
  return client.via === "metadata-document" && u.protocol === "https:" && parseUrl(client.clientId)?.host === u.host;
}
