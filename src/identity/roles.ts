// Who may do what on the operator surface: "admin" reads and changes everything; "operator-readonly" reads what an
// admin reads (admin API GETs, every tenant in the console, readiness figures) and changes nothing.
import type { Tenant } from "./tenants.js";

export type OperatorRole = "admin" | "readonly" | "tenant";

export function roleOf(tenant: Tenant): OperatorRole {
  if (tenant.scopes.includes("admin")) return "admin";
  if (tenant.scopes.includes("operator-readonly")) return "readonly";
  return "tenant";
}

/** Admin or operator-readonly: may read every tenant. */
export const isOperator = (tenant: Tenant) => roleOf(tenant) !== "tenant";
