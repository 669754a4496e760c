// A tenant's budget windows as the ledger reads them: USD strings from the configuration, in atomic units.
import type { Tenant } from "../identity/tenants.js";
import type { BudgetLimits } from "../state/types.js";
import { usdToAtomic } from "./money.js";

/** A tenant's budget windows in atomic units. */
export function tenantLimits(tenant: Tenant): BudgetLimits {
  const b = tenant.budget;
  return {
    daily: b.daily ? usdToAtomic(b.daily) : undefined,
    monthly: b.monthly ? usdToAtomic(b.monthly) : undefined,
    total: b.total ? usdToAtomic(b.total) : undefined,
  };
}
