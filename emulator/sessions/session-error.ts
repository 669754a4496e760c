// The one error type of the sessions half: a status, a machine code and a message, rendered as `{message, code}`.
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

export class SessionError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "SessionError";
  }
}

/** The JSON body the upstream sends for an error. */
export function errorBody(err: SessionError): { message: string; code: string } {
  return { message: err.message, code: err.code };
}

/** Turns any thrown value into the client-facing JSON error; unknown errors become a 500 without internals. */
export function respondWithError(c: Context, err: unknown) {
  if (err instanceof SessionError) return c.json(errorBody(err), err.status);
  return c.json({ message: "Internal emulator error", code: "internal_error" }, 500);
}
