// Who is calling: the caller a request's identify step sets (a tenant key, one of the gateway's own tokens, the metrics
// bearer, the console's session cookie), and what routes read of it. The step itself is middleware/identify.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { ConsoleSession } from "./console-session.js";
import type { Tenant } from "./tenants.js";
import type { GatewayToken } from "./tokens.js";
import type { SignedInIdentity } from "./sign-in.js";
import { rightsOf, type Rights } from "./roles.js";

export type Caller =
  | {
      via: "key";
      tenant: Tenant /** The key as presented (MCP tools call rows with it; a console link is bound to it). */;
      presented: string;
    }
  | {
      via: "token";
      tenant: Tenant;
      token: GatewayToken /** The token as presented, for checks while a socket is open. */;
      presented: string;
    }
  | { via: "ticket" }
  /** An own row open to anyone, called without a valid credential. */
  | { via: "public" }
  | { via: "metrics-token" }
  /**
   * The console's session cookie: the session and its tenant, or only the session when its tenant or key is no longer
   * live (the console ends it), or the error reading it (the console answers it with its own page).
   */
  | { via: "console"; session?: ConsoleSession; tenant?: Tenant; error?: unknown }
  /** A person signed in through the identity provider (a bearer JWT) or Cloudflare Access, on the admin API. */
  | { via: "identity"; tenant: Tenant; identity: SignedInIdentity };

/** A caller with a tenant key or one of the gateway's tokens. */
export type TenantCaller = Extract<Caller, { via: "key" | "token" }>;

declare module "hono" {
  interface ContextVariableMap {
    caller: Caller;
    /** The tenant behind the request, once a key or token has been checked. */
    tenant: Tenant | undefined;
    /** Who the audit log names when it is not the tenant: `oidc:<sub>` or `access:<sub>` for a person signed in through a provider. */
    actor: string | undefined;
    /** A buyer whose x402 payment the sales step verified (src/sales): identify admits it as this wallet tenant's caller. */
    soldCaller: TenantCaller | undefined;
  }
}

/** The tenant a key or token caller acts for (ticket callers have none). */
export function callerTenant(c: Context<GatewayEnv>): Tenant {
  const caller = c.get("caller");
  if (!caller || !("tenant" in caller) || !caller.tenant)
    throw new GatewayError(401, "unauthorized", "This route needs a tenant key or a gateway token.");
  return caller.tenant;
}

/**
 * What a caller may do on the operator surface (roles.ts's `rightsOf`): a key by its tenant's scopes, a person by the
 * role the provider's claims mapped to; a gateway token, ticket or anonymous caller is a tenant's at most.
 */
export function callerRights(caller: Caller | undefined): Rights {
  if (caller?.via === "identity") return rightsOf({ tenant: caller.tenant, identity: caller.identity });
  if (caller?.via === "console") return rightsOf({ tenant: caller.tenant, identity: caller.session?.identity });
  if (caller?.via === "key") return rightsOf({ tenant: caller.tenant });
  return rightsOf({});
}

/**
 * A keyless search or MCP token's own spend cap, when the caller holds one: an OAuth grant's tokens share the grant's
 * cap (counted under the grant's id, in its window), and every entry they spend names the grant.
 */
export function callerCap(
  c: Context<GatewayEnv>,
): { id: string; amount: bigint; window?: "daily" | "monthly" | "total"; grant?: string } | undefined {
  const caller = c.get("caller");
  if (caller?.via !== "token") return undefined;
  const { token } = caller;
  const amount = token.cap;
  if (amount === undefined) return undefined;
  return token.grant ? { id: token.grant, amount, window: token.capWindow ?? "total", grant: token.grant } : { id: token.jti, amount };
}

/** Equal strings in time that does not depend on where they differ. */
function sameSecret(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/**
 * The check of a TOLLGATE_METRICS_TOKEN bearer, given to services in place of the token (which stays in this closure
 * and reaches nothing else). undefined: no metrics token, only operator keys may scrape.
 */
export function metricsTokenCheck(token: string | undefined): ((bearer: string) => boolean) | undefined {
  return token ? (bearer) => sameSecret(bearer, token) : undefined;
}
