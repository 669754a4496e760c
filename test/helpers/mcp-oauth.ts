// The client side of the gateway's OAuth flow, shared by the Node and the Workers tests (Web standards only: it runs
// in workerd too): an in-memory OAuthClientProvider for the official MCP client's auth(), the consent form as a
// browser posts it, a PKCE pair, form posts to /authorize, /token and /revoke, a bearer's tools/list, and tool results.
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** A loopback redirect URI nothing listens on: the tests read the code off the consent's 302. */
export const OAUTH_REDIRECT = "http://127.0.0.1:9/oauth/callback";

/** A fetch: global fetch on Node, the Worker's fetch handler in workerd. */
export type FetchFn = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** An OAuthClientProvider that keeps everything in memory and hands the authorization URL to the test. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authUrl?: URL;
  private readonly grantTypes: boolean;

  /**
   * `clientName` is what it registers as; `client` names a client already known (a metadata document's URL);
   * `grantTypes: false` registers without grant_types (the server's default).
   */
  constructor(
    private readonly clientName: string,
    opts: { client?: OAuthClientInformationMixed; grantTypes?: false } = {},
  ) {
    this.client = opts.client;
    this.grantTypes = opts.grantTypes !== false;
  }

  get redirectUrl() {
    return OAUTH_REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [OAUTH_REDIRECT],
      token_endpoint_auth_method: "none",
      ...(this.grantTypes ? { grant_types: ["authorization_code", "refresh_token"] } : {}),
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** What the tenant picks on the consent page (defaults: search, 1.00 over the grant's life, 30 days, allow). */
export interface ConsentChoices {
  credential: string;
  scopes?: string[];
  cap?: string;
  window?: string;
  days?: string;
  action?: string;
  /** The tool boxes ticked (the form then says it showed them). */
  tools?: string[];
  /** The agent policy picked (a name of the tenant's `agentPolicies`). */
  agentPolicy?: string;
}

/** The consent page's hidden fields: its pending request and its form token. */
export function consentHidden(html: string): { request: string; _csrf: string } {
  const request = /name="request" value="([^"]+)"/.exec(html)?.[1];
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!request || !csrf) throw new Error(`not a consent page: ${html.slice(0, 400)}`);
  return { request, _csrf: csrf };
}

/** The consent form a browser posts from `html` with the tenant's choices. */
export function consentForm(html: string, choices: ConsentChoices): URLSearchParams {
  const form = new URLSearchParams({
    ...consentHidden(html),
    credential: choices.credential,
    cap: choices.cap ?? "1.00",
    window: choices.window ?? "total",
    days: choices.days ?? "30",
    action: choices.action ?? "allow",
  });
  for (const s of choices.scopes ?? ["search"]) form.append("scope", s);
  if (choices.tools) form.set("tools_shown", "1");
  for (const t of choices.tools ?? []) form.append("tool", t);
  if (choices.agentPolicy !== undefined) form.set("agent_policy", choices.agentPolicy);
  return form;
}

/** A form POST (application/x-www-form-urlencoded), redirects not followed. */
export function postForm(fetchFn: FetchFn, url: string, form: Record<string, string> | URLSearchParams): Promise<Response> {
  return fetchFn(url, {
    method: "POST",
    body: form instanceof URLSearchParams ? form : new URLSearchParams(form),
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
}

/** RFC 7591 registration at `${origin}/register` by hand: a public client named `clientName` with one redirect URI. */
export function registerClient(fetchFn: FetchFn, origin: string, clientName: string, redirectUri = OAUTH_REDIRECT): Promise<Response> {
  return fetchFn(`${origin}/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: clientName, redirect_uris: [redirectUri] }),
  });
}

/** The refresh grant at `${origin}/token`: a public client's refresh token exchanged for the next pair. */
export function refreshWith(fetchFn: FetchFn, origin: string, refreshToken: string, clientId: string): Promise<Response> {
  return postForm(fetchFn, `${origin}/token`, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId });
}

/** A PKCE pair (S256), with Web Crypto. */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  return { verifier, challenge };
}

function base64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** MCP tools/list straight to `${origin}/mcp` with a bearer token (no client, no refresh). */
export function listToolsAs(fetchFn: FetchFn, origin: string, token: string): Promise<Response> {
  return fetchFn(`${origin}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
}

/** A tool result's JSON text. */
export const toolJson = (r: CallToolResult) => JSON.parse((r.content.find((p) => p.type === "text") as { text: string }).text);

/** A tool result's JSON text; a tool error throws. */
export function toolOk(r: CallToolResult) {
  if (r.isError) throw new Error(`tool error: ${JSON.stringify(r.content)}`);
  return toolJson(r);
}
