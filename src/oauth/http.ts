// The OAuth server's small Web-standard helpers: random tokens, the SHA-256 digests codes and refresh tokens are kept
// as, constant-time comparison, the authorization response's redirect, its error page, and bounded form reading.
import type { Context } from "hono";
import { OAuthError, oauthErrorResponse } from "./errors.js";
import { OAuthErrorPage, oauthHtml } from "./page.js";

/** Form and token requests are small. */
export const FORM_LIMIT = 16 * 1024;

export function randomToken(bytes = 32): string {
  let bin = "";
  for (const b of crypto.getRandomValues(new Uint8Array(bytes))) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** SHA-256, base64url: codes and refresh tokens are kept only as this; PKCE's S256 is the same function. */
export async function sha256url(s: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  let bin = "";
  for (const b of d) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Equal strings in time that does not depend on where they differ. */
export function sameSecret(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/** The redirect URI with the authorization response's parameters (RFC 9207: `iss` too). */
export function redirectTo(uri: string, params: Record<string, string | undefined>): Response {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return new Response(null, { status: 302, headers: { location: u.href, "cache-control": "no-store" } });
}

/** An HTML error page (for the browser: nothing is sent to an unchecked redirect URI). */
export const errorPage = (status: number, title: string, message: string) => oauthHtml(OAuthErrorPage({ title, message }), status);

/** Form fields (application/x-www-form-urlencoded), repeated ones kept; anything else is invalid_request. */
export async function formOf(c: Context): Promise<URLSearchParams> {
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
export function one(form: URLSearchParams, name: string): string | undefined {
  const all = form.getAll(name);
  if (all.length > 1) throw new OAuthError(400, "invalid_request", `${name} is repeated.`);
  return all[0] === "" ? undefined : all[0];
}

/** The AES-GCM key a secret (a refresh token) seals with: only a holder of the secret can open what it sealed. */
async function sealingKey(secret: string): Promise<CryptoKey> {
  const raw = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`tollgate oauth seal\n${secret}`));
  return crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
}

/** Seals `text` under `secret` (base64url of iv ‖ ciphertext): kept in shared state, readable only with the secret. */
export async function seal(secret: string, text: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealingKey(secret), new TextEncoder().encode(text)));
  const all = new Uint8Array(iv.length + ct.length);
  all.set(iv);
  all.set(ct, iv.length);
  let bin = "";
  for (const b of all) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Opens what seal() sealed under `secret`; undefined when it cannot (another secret, damaged). */
export async function unseal(secret: string, sealed: string): Promise<string | undefined> {
  try {
    const bin = atob(sealed.replace(/-/g, "+").replace(/_/g, "/"));
    const all = Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
    const pt = await crypto.subtle.decrypt({ name: "AES-GCM", iv: all.slice(0, 12) }, await sealingKey(secret), all.slice(12));
    return new TextDecoder().decode(pt);
  } catch {
    return undefined;
  }
}

/**
 * The client a token request names: `client_id` in the form, or HTTP Basic (RFC 6749 §2.3.1: form-encoded id and
 * secret). This server issues no secrets: a Basic secret that is not empty is refused (401 invalid_client).
 */
export function tokenClient(c: Context, form: URLSearchParams): { clientId: string | undefined; basic: boolean } {
  const fromForm = one(form, "client_id");
  const header = c.req.header("authorization");
  if (!header || !/^basic\s/i.test(header)) return { clientId: fromForm, basic: false };
  const refused = (description: string) =>
    new OAuthError(401, "invalid_client", description, { "www-authenticate": 'Basic realm="tollgate"' });
  let id: string;
  let secret: string;
  try {
    const decoded = atob(header.replace(/^basic\s+/i, "").trim());
    const at = decoded.indexOf(":");
    if (at < 0) throw new Error("no colon");
    id = decodeURIComponent(decoded.slice(0, at).replace(/\+/g, " "));
    secret = decodeURIComponent(decoded.slice(at + 1).replace(/\+/g, " "));
  } catch {
    throw refused("The Authorization header is not HTTP Basic credentials (client_id:client_secret, base64).");
  }
  if (secret) throw refused("This server issues no client secrets: public clients send client_id alone (PKCE).");
  if (fromForm !== undefined && fromForm !== id)
    throw new OAuthError(400, "invalid_request", "client_id differs from the Basic credentials'.");
  return { clientId: id || fromForm, basic: true };
}

/** Whether the caller asked for JSON rather than a page (a host probing /authorize, not a browser). */
function wantsJson(c: Context): boolean {
  const accept = c.req.header("accept") ?? "";
  return /application\/json/i.test(accept) && !/text\/html/i.test(accept);
}

/** An authorization request refused where it was made (nothing sent to its redirect URI): JSON when asked, else a page. */
export function refusedHere(c: Context, err: OAuthError): Response {
  if (wantsJson(c)) return oauthErrorResponse(err.status === 401 ? err : new OAuthError(400, err.error, err.description));
  return errorPage(400, "This sign-in link cannot be used", `${err.error}: ${err.description}`);
}
