// The credential tree's rule at the point of use: a credential derived from a tenant key (an OAuth grant and the tokens
// it mints, a capped token minted with the key, a console session) works only while its tenant still holds that key,
// live. The directory is the fleet's (a revoked key leaves every instance's snapshot within the tenant sync's bound), so
// a derived credential dies on every instance when its parent does, without a revocation list of its own.
import { GatewayError } from "../errors.js";
import { keyIdOf, type Tenant } from "./tenants.js";

/** Whether `tenant` still holds the key whose id (keyIdOf) or hash is `key`, unexpired at `now`. */
export function holdsKey(tenant: Tenant | undefined, key: string, now: number): boolean {
  if (!tenant) return false;
  return tenant.keys.some((k) => (k.hash === key || keyIdOf(k.hash) === key) && (!k.expiresAt || Date.parse(k.expiresAt) > now));
}

/** Refuses a token derived from a key its tenant no longer holds (401 token_revoked, as a revoked token is). */
export function requireParentKey(token: { parentKey?: string }, tenant: Tenant | undefined, now: number): void {
  if (token.parentKey !== undefined && !holdsKey(tenant, token.parentKey, now))
    throw new GatewayError(401, "token_revoked", "The tenant key this token derives from has been revoked or has expired.");
}
