// A tenant's budget limits as the ledger checks them: the amounts parsed once when the tenant was taken in
// (src/payments/amounts.ts), never re-derived from the configuration's USD strings on a request.
import { tenantAmounts } from "../amounts.js";
import type { Tenant } from "../../identity/tenants.js";
import type { BudgetLimits } from "../../state/types.js";

/** A tenant's budget windows in atomic units; an absent window is unlimited. */
export function limitsOf(tenant: Tenant): Readonly<BudgetLimits> {
  return tenantAmounts(tenant).budget;
}

/** Whether the tenant has a limit in any window. */
export function isBudgeted(tenant: Tenant): boolean {
  return tenantAmounts(tenant).budgeted;
}
