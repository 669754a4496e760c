// The one error type, and the one place that turns it into the `{message, code}` JSON a client sees.
import { isStateUnavailable } from "./state/errors.js";

export class GatewayError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
    /** Extra fields merged into the JSON body (figures behind a refusal: limit, spent, resetAt...). */
    public readonly details: Record<string, unknown> = {},
    public readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "GatewayError";
  }
}

export const errors = {
  badRequest: (message: string, code = "bad_request", details?: Record<string, unknown>) => new GatewayError(400, code, message, details),
  unauthorized: (
    message = "Missing or invalid API key. Send it as `x-api-key: <key>` or `Authorization: Bearer <key>`.",
    code = "unauthorized",
  ) => new GatewayError(401, code, message),
  forbidden: (message: string, code = "forbidden", details?: Record<string, unknown>) => new GatewayError(403, code, message, details),
  notFound: (message = "Not found", code = "not_found") => new GatewayError(404, code, message),
  upstreamUnavailable: (message = "The upstream service could not be reached; try again shortly.", code = "upstream_unavailable") =>
    new GatewayError(502, code, message),
  upstreamTimeout: (message = "The upstream service did not answer in time; try again shortly.") =>
    new GatewayError(504, "upstream_timeout", message),
};

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}

/** Renders any thrown value as the upstream's error shape. Unknown errors never leak their text. */
export function errorResponse(err: unknown, requestId?: string): Response {
  const headers: Record<string, string> = requestId ? { "x-request-id": requestId } : {};
  if (err instanceof GatewayError) {
    return jsonResponse(err.status, { message: err.message, code: err.code, ...err.details }, { ...err.headers, ...headers });
  }
  if (isStateUnavailable(err)) {
    return jsonResponse(
      503,
      { message: "The gateway's shared state store is unreachable; nothing was paid. Try again shortly.", code: "state_unavailable" },
      { "retry-after": "5", ...headers },
    );
  }
  return jsonResponse(
    500,
    { message: "Internal gateway error; the request id identifies it in the gateway's log.", code: "internal_error" },
    headers,
  );
}
