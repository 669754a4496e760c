// Which tenant scope each upstream path needs.
import type { Scope } from "../../config/schema.js";

const RULES: Array<[RegExp, Scope]> = [
  // Volumes are not tracked per tenant yet: until they are, only admins may touch them (never one tenant's by another).
  [/^\/api\/volume(\/|$)/, "admin"],
  [/^\/api\/(sandbox|sandboxes|images|snapshots)(\/|$)/, "sandboxes"],
  [/^\/api\/(session|sessions)(\/|$)/, "sessions"],
  [/^\/x402\/session(\/|$)/, "sessions"],
  [/^\/api\/web\//, "search"],
  [/^\/x402\/web\//, "search"],
];

/** The scope a path needs; undefined for paths the gateway does not front. */
export function scopeForPath(path: string): Scope | undefined {
  for (const [re, scope] of RULES) if (re.test(path)) return scope;
  return undefined;
}
