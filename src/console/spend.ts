// What the console shows about money: each tenant's spend per budget window (both kinds, and each apart) against
// its limits, and what the cache and coalescing saved.
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../tenants.js";
import type { BudgetWindow } from "../state/types.js";
import { tenantLimits } from "../payments/limits.js";
import { resetAt } from "../state/windows.js";

export interface WindowSpend {
  window: BudgetWindow;
  limit?: bigint;
  spent: bigint;
  x402: bigint;
  credits: bigint;
  resetsAt: string | null;
}

export interface TenantSpend {
  tenant: Tenant;
  windows: WindowSpend[];
}

const WINDOWS: BudgetWindow[] = ["daily", "monthly", "total"];

export async function tenantSpend(services: GatewayServices, tenant: Tenant): Promise<TenantSpend> {
  const now = services.now();
  const limits = tenantLimits(tenant);
  const used = await services.stores.ledger.usage(tenant.id, now);
  return {
    tenant,
    windows: WINDOWS.map((w) => ({
      window: w,
      limit: limits[w],
      spent: used[w],
      x402: used.byKind.x402[w],
      credits: used.byKind.credits[w],
      resetsAt: resetAt(w, now),
    })),
  };
}
