// The `route` label of a request: the route row's name when the chain set one, else a coarse surface (never a raw path).
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";

const SURFACES: Array<[RegExp, string]> = [
  [/^\/api\/(sandbox|sandboxes|images|snapshots)(\/|$)/, "api.sandboxes"],
  [/^\/api\/(session|sessions)(\/|$)/, "api.sessions"],
  [/^\/api\/volume(\/|$)/, "api.volumes"],
  [/^\/api\/web\//, "api.web"],
  [/^\/api\//, "api.other"],
  [/^\/x402\/session(\/|$)/, "x402.sessions"],
  [/^\/x402\//, "x402.other"],
  [/^\/sandbox\//, "sandbox.runtime"],
  [/^\/devtools\//, "cdp"],
  [/^\/_tollgate\//, "tollgate.other"],
];

/** A fixed surface name for a path no route named. */
function surfaceOf(path: string): string {
  for (const [re, name] of SURFACES) if (re.test(path)) return name;
  return "unmatched";
}

/**
 * `logFields.route` (the route table's row name) when set; else the matched route pattern when it has no wildcard
 * (`/_tollgate/health`, `/api/sandbox/:id`); else the path's surface. Label values stay bounded either way.
 */
export function routeLabel(c: Context<GatewayEnv>): string {
  const named = c.get("logFields")?.route;
  if (named) return named;
  let pattern: string | undefined;
  try {
    pattern = c.req.routePath;
  } catch {
    pattern = undefined;
  }
  if (pattern && !pattern.includes("*")) return pattern;
  return surfaceOf(c.req.path);
}
