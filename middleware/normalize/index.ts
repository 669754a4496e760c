// Path normalisation before routing, the way the upstream will read the path: the route the gateway picks is the one
// the upstream serves. Unreserved escapes are decoded, dot segments resolved, repeated slashes merged; anything that
// could be read two ways (an encoded `/` or `\`, NUL or control characters, an invalid escape) is refused.
import { errorResponse, GatewayError } from "../../src/errors.js";
import { splitRequestUrl } from "../../src/web/request-url.js";

export type NormalisedPath = { ok: true; path: string; changed: boolean } | { ok: false; reason: string };

const HEX = /^[0-9A-Fa-f]{2}$/;

/** RFC 3986 unreserved characters: decoding them never changes what a path means. */
function isUnreserved(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2d ||
    code === 0x2e ||
    code === 0x5f ||
    code === 0x7e
  );
}

/**
 * Whether the loop below would change or refuse `raw`: an escape, a backslash, a control character or space, `//`, a
 * dot segment, a trailing `/`. One scan, no string built.
 */
function needsWork(raw: string): boolean {
  // raw.charCodeAt is NaN past the end. (No helper closure: this runs on every request.)
  for (let i = 0; i < raw.length; i++) {
    const ch = raw.charCodeAt(i);
    if (ch <= 0x20 || ch === 0x25 || ch === 0x5c || ch === 0x7f) return true;
    if (ch !== 0x2f) continue;
    if (i === raw.length - 1) return i > 0; // a trailing slash (not the root)
    const next = raw.charCodeAt(i + 1);
    if (next === 0x2f) return true;
    if (next === 0x2e) {
      const after = raw.charCodeAt(i + 2);
      if (Number.isNaN(after) || after === 0x2f) return true;
      const third = raw.charCodeAt(i + 3);
      if (after === 0x2e && (Number.isNaN(third) || third === 0x2f)) return true;
    }
  }
  return false;
}

/** Normalises the path part of a request target (no query). */
export function normalisePath(raw: string): NormalisedPath {
  if (!raw.startsWith("/")) return { ok: false, reason: "the path must start with /" };
  // Most paths are already canonical: one regex test instead of rebuilding them character by character.
  if (!needsWork(raw)) return { ok: true, path: raw, changed: false };
  let decoded = "";
  for (let i = 0; i < raw.length; i++) {
    const ch = raw.charCodeAt(i);
    if (ch < 0x21 || ch === 0x7f) return { ok: false, reason: "control characters and spaces are not allowed in paths" };
    if (ch === 0x5c) return { ok: false, reason: "backslashes are not allowed in paths" };
    if (ch !== 0x25) {
      decoded += raw[i];
      continue;
    }
    const hex = raw.slice(i + 1, i + 3);
    if (!HEX.test(hex)) return { ok: false, reason: `invalid percent-escape "${raw.slice(i, i + 3)}"` };
    const code = Number.parseInt(hex, 16);
    if (code === 0x2f || code === 0x5c) return { ok: false, reason: "encoded slashes and backslashes are not allowed in paths" };
    if (code < 0x20 || code === 0x7f) return { ok: false, reason: "encoded control characters are not allowed in paths" };
    decoded += isUnreserved(code) ? String.fromCharCode(code) : `%${hex.toUpperCase()}`;
    i += 2;
  }
  const out: string[] = [];
  for (const seg of decoded.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (out.length === 0) return { ok: false, reason: "the path climbs above the root" };
      out.pop();
      continue;
    }
    out.push(seg);
  }
  const path = `/${out.join("/")}`;
  return { ok: true, path, changed: path !== raw };
}

/**
 * The app's fetch, with paths normalised before any route sees them, the way the upstream will read them: a path that
 * could be read two ways is refused (400 invalid_path), one that normalises differently is routed as normalised.
 * @example app.fetch = normalisingFetch(app.fetch)
 */
export function normalisingFetch<E, X>(dispatch: (request: Request, env?: E, executionCtx?: X) => Response | Promise<Response>) {
  return (request: Request, env?: E, executionCtx?: X): Response | Promise<Response> => {
    const { origin, path, query } = splitRequestUrl(request.url);
    const n = normalisePath(path);
    if (!n.ok) {
      return errorResponse(
        new GatewayError(400, "invalid_path", `The request path cannot be accepted: ${n.reason}.`),
        request.headers.get("x-request-id") ?? undefined,
      );
    }
    if (!n.changed) return dispatch(request, env, executionCtx);
    const init: RequestInit & { duplex?: "half" } = {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      duplex: "half",
    };
    let normalised: Request;
    try {
      normalised = new Request(origin + n.path + query, init);
    } catch {
      return errorResponse(new GatewayError(400, "invalid_host", "The request's Host cannot be used in a URL."));
    }
    return dispatch(normalised, env, executionCtx);
  };
}
