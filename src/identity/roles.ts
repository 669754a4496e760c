// Who may do what on the operator surface, decided in one place for every surface (console, admin API, OAuth consent,
// MCP, readiness): "admin" reads and changes everything; "operator-readonly" reads what an admin reads (admin API GETs,
// every tenant in the console, readiness figures) and changes nothing; "tenant" acts for its own tenant only.
// A key's role comes from its tenant's scopes (an operator configured them); a person's from the provider's claims
// mapped by [operators.oidc.roles] — and a person mapped as a tenant user is a tenant user, whatever scopes the tenant
// their claim names holds: a tenant claim never confers an operator role (`rightsOf`, `personTenant`).
import type { Tenant } from "./tenants.js";

export type OperatorRole = "admin" | "readonly" | "tenant";

/** The scopes that make a key an operator's: they come with a key, never with a tenant claim. */
const OPERATOR_SCOPES: ReadonlySet<string> = new Set(["admin", "operator-readonly"]);

/** What one caller may do, the same on every surface. */
export interface Rights {
  role: OperatorRole;
  /** May read every tenant (admin, operator-readonly). */
  readsAll: boolean;
  /** May change what is not its own tenant's (admin only). */
  changesAll: boolean;
}

/**
 * The rights of a caller: a tenant key (its tenant's scopes), or a person signed in through the identity provider or
 * Cloudflare Access (the role the provider's claims mapped to, never the scopes of the tenant they name).
 */
export function rightsOf(who: { tenant?: Tenant; identity?: { role: OperatorRole } }): Rights {
  const role: OperatorRole = who.identity
    ? who.identity.role
    : who.tenant?.scopes.includes("admin")
      ? "admin"
      : who.tenant?.scopes.includes("operator-readonly")
        ? "readonly"
        : "tenant";
  return { role, readsAll: role !== "tenant", changesAll: role === "admin" };
}

/**
 * The tenant a tenant *user* acts for: its record with the operator scopes taken out, so that no check reading scopes
 * (the console's, the admin API's, a consent's, an MCP token minted from it) finds an operator role a key of that tenant
 * would have had.
 */
export function personTenant(tenant: Tenant): Tenant {
  return tenant.scopes.some((s) => OPERATOR_SCOPES.has(s))
    ? { ...tenant, scopes: tenant.scopes.filter((s) => !OPERATOR_SCOPES.has(s)) }
    : tenant;
}
