// OAuth's own error shape (RFC 6749 §5.2): `error` and `error_description`, with the gateway's `code` and `message`
// beside them (the same words), so OAuth clients and the gateway's own readers both find theirs.
import { jsonResponse } from "../errors.js";

export class OAuthError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 429 | 503,
    readonly error: string,
    readonly description: string,
    /** Extra response headers (`WWW-Authenticate` on a 401). */
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}

/** The answer for an OAuth error: never cached. */
export function oauthErrorResponse(err: OAuthError): Response {
  return jsonResponse(
    err.status,
    { error: err.error, error_description: err.description, code: err.error, message: err.description },
    { "cache-control": "no-store", pragma: "no-cache", ...err.headers },
  );
}
