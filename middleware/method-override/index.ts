// The chain's first step: a request that asks to be read as another method is refused before anything else runs.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { GatewayError } from "../../src/errors.js";

/**
 * `?_method=` asks some frameworks to read a request as another method: the gateway routes, checks and meters the
 * method on the wire, so a request asking for another is refused rather than forwarded (the headers that ask the same,
 * X-HTTP-Method-Override and its kin, are never forwarded: src/web/transport.ts).
 */
export const refuseMethodOverride: MiddlewareHandler<GatewayEnv> = async function refuseMethodOverride(c, next) {
  const url = c.req.url;
  const q = url.indexOf("?");
  if (q >= 0 && new URLSearchParams(url.slice(q + 1)).has("_method"))
    throw new GatewayError(400, "method_override_refused", "?_method= is not accepted: send the request with the method you mean.", {
      field: "_method",
    });
  return next();
};
