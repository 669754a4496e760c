// A row's JSON body limit, the step before any body is read: a declared Content-Length above it is refused at once, and
// the one JSON body reader (src/routing/json-body.ts) counts a stream against it.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { hotHeader } from "../../src/web/request-headers.js";
import { tooLarge } from "../../src/routing/json-body.js";
import { webPlatform, type PlatformSpeed } from "../../src/web/speed.js";

/** A row's JSON body limit: a declared length above it is refused at once, and the reader counts a stream against it. */
export function limitBody(limit: number, platform: PlatformSpeed = webPlatform): MiddlewareHandler<GatewayEnv> {
  return function limitBodyMiddleware(c, next) {
    const declared = hotHeader(platform, c, "content-length");
    if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
    c.set("bodyLimit", limit);
    return next();
  };
}
