// The credential tree's rule at the point of use: a credential derived from a tenant key (an OAuth grant and the tokens
// it mints, a capped token minted with the key, a console session) works only while its tenant still holds that key,
// live. The directory is the fleet's (a revoked key leaves every instance's snapshot within the tenant sync's bound), so
// a derived credential dies on every instance when its parent does, without a revocation list of its own.
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Caller, TenantCaller } from "./caller.js";
import { hashTenantKey, keyIdOf, type Tenant } from "./tenants.js";
import type { GatewayToken } from "./tokens.js";

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

/**
 * A derived credential's parents, as its claims carry them: the key (`pk`, keyIdOf), the OAuth grant (`g`: revoking
 * the grant revokes it, TokenService.readRevoked) and the gateway tokens it was minted for (`pt`: revoking any of them
 * revokes it), with the expiry it may not outlive (`notAfter`, epoch seconds: the parent token's; mint caps the token's
 * exp at it and carries it as the `pe` claim, so an open socket admitted with the child closes when the parent expires).
 */
export interface Lineage {
  parentKey?: string;
  grant?: string;
  parentTokens?: string[];
  notAfter?: number;
}

/**
 * How many gateway tokens deep a lineage may go. A real chain is one deep (a capped token reads a sandbox); each level
 * adds a jti to the token and a read to its revocation check, so a client cannot grow them without end.
 */
const MAX_TOKEN_DEPTH = 4;

/**
 * The lineage a token minted for `caller` inherits: a tenant key is the parent itself; a gateway token passes on its
 * own parents (so a runtime token minted for an OAuth grant's agent dies with the grant and with the consenting key)
 * and is a parent itself (the child dies when it is revoked, and expires when it does).
 */
export async function lineageOf(caller: Caller | undefined): Promise<Lineage> {
  if (caller?.via === "key") return { parentKey: keyIdOf(await hashTenantKey(caller.presented)) };
  if (caller?.via === "token") {
    const t = caller.token;
    const parentTokens = [...(t.parentTokens ?? []), t.jti];
    if (parentTokens.length > MAX_TOKEN_DEPTH)
      throw new GatewayError(
        403,
        "token_depth",
        `A token minted from this token would derive from ${parentTokens.length} gateway tokens (at most ${MAX_TOKEN_DEPTH}); use the token you were given first, or a tenant key.`,
      );
    return {
      ...(t.parentKey ? { parentKey: t.parentKey } : {}),
      ...(t.grant ? { grant: t.grant } : {}),
      parentTokens,
      notAfter: t.exp,
    };
  }
  return {};
}

/**
 * A token holder's tenant once the token's parents are checked in this instance's snapshot: the tenant enabled (else
 * 401 tenant_disabled), the parent key held (else 401 token_revoked). One call for the identify step.
 */
export function tokenParents(
  directory: { get(id: string): Tenant | undefined },
  token: Pick<GatewayToken, "tenant" | "parentKey">,
  now: number,
): Tenant {
  const tenant = directory.get(token.tenant);
  if (!tenant?.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant this token was minted for is disabled.");
  requireParentKey(token, tenant, now);
  return tenant;
}

/** Whether a token's parents still stand in this instance's snapshot: its tenant enabled, its parent key held. */
export function parentsStand(
  token: Pick<GatewayToken, "tenant" | "parentKey">,
  directory: { get(id: string): Tenant | undefined },
  now: number,
) {
  const tenant = directory.get(token.tenant);
  return !!tenant?.enabled && (token.parentKey === undefined || holdsKey(tenant, token.parentKey, now));
}

/**
 * The check an open connection admitted with a gateway token repeats (every 2 s, src/host/node/ws-relay.ts): the token
 * itself (revoked, its grant revoked, the kill switch: TokenService.stillValid) and its parents, read from a tenant
 * snapshot brought up to date first (a key revoked on another instance closes it within the tenant sync's bound too).
 */
export function whileParentsStand(
  services: Pick<GatewayServices, "tokens" | "directory" | "tenantSync" | "now">,
  presented: string,
  token: Pick<GatewayToken, "tenant" | "parentKey">,
): () => Promise<boolean> {
  return async () => {
    await services.tenantSync.poll();
    return parentsStand(token, services.directory, services.now()) && (await services.tokens.stillValid(presented));
  };
}

/**
 * The recheck of an open connection, for either caller: a token's (whileParentsStand), or a tenant key's: it still
 * authenticates (not revoked or expired, its tenant enabled). A store that cannot be read keeps the connection (the
 * relay asks again at its next recheck).
 */
export function whileCallerStands(
  services: Pick<GatewayServices, "tokens" | "directory" | "tenantSync" | "now">,
  caller: TenantCaller,
): () => Promise<boolean> {
  if (caller.via === "token") return whileParentsStand(services, caller.presented, caller.token);
  return () =>
    services.directory.authenticate(caller.presented).then(
      () => true,
      (err: unknown) => {
        if (err instanceof GatewayError && err.status === 401) return false;
        throw err;
      },
    );
}
