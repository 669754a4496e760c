// The OAuth server's small Web-standard helpers: random tokens, the SHA-256 digests codes and refresh tokens are kept
// as, constant-time comparison, the authorization response's redirect, its error page, and bounded form reading.
import type { Context } from "hono";
import { OAuthError } from "./errors.js";
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
