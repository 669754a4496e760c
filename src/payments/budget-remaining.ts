// What a tenant may still spend: the smallest remaining amount over its budget windows, shown on paid answers.
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import { atomicToUsd } from "./money.js";
import { tenantLimits } from "./limits.js";

/**
 * A string at once where the tenant has no budget (nothing to subtract from, no ledger read: this runs on every cache
 * hit), else the ledger's answer: `await` it either way.
 */
export function budgetRemaining(services: GatewayServices, tenant: Tenant): string | Promise<string> {
  const limits = tenantLimits(tenant);
  if (limits.daily === undefined && limits.monthly === undefined && limits.total === undefined) return "unlimited";
  return remainingOf(services, tenant, limits);
}

async function remainingOf(services: GatewayServices, tenant: Tenant, limits: ReturnType<typeof tenantLimits>): Promise<string> {
  const usage = await services.stores.ledger.usage(tenant.id, services.now());
  let rem: bigint | undefined;
  for (const w of ["daily", "monthly", "total"] as const) {
    const l = limits[w];
    if (l === undefined) continue;
    const left = l - usage[w];
    if (rem === undefined || left < rem) rem = left;
  }
  return rem === undefined ? "unlimited" : atomicToUsd(rem < 0n ? 0n : rem);
}
