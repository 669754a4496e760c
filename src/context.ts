// The gateway's Hono environment. Its per-request variables are declared beside what sets them (Hono's
// ContextVariableMap): requestId (middleware/request-id), logFields (middleware/access-log), tenant and caller
// (src/identity/caller.ts, set by middleware/identify), jsonBody (src/routing/json-body.ts), answerHeaders (here).
import type { Context } from "hono";
import type { BlankEnv } from "hono/types";

export type GatewayEnv = BlankEnv;

declare module "hono" {
  interface ContextVariableMap {
    /** Headers for the request's answer, named before it exists (answerHeader). */
    answerHeaders: Record<string, string>;
  }
}

/**
 * Names a header for the request's answer, whichever answers it (the handler's, or an error's): set on it by the
 * request-id step (middleware/request-id), after the rest of the chain. A step that knows its header before the answer
 * (the rate limit's) then does nothing after next(), and shares one step of Hono's chain with the steps after it
 * (middleware/series).
 */
export function answerHeader(c: Context, name: string, value: string): void {
  const headers = c.get("answerHeaders");
  if (headers) headers[name] = value;
  else c.set("answerHeaders", { [name]: value });
}
