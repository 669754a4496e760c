// What a tenant may still spend: the smallest remaining amount over its budget windows, shown on paid answers.
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../../middleware/identify/tenants.js";
import { atomicToUsd } from "./money.js";
import { tenantLimits } from "./limits.js";

export async function budgetRemaining(services: GatewayServices, tenant: Tenant): Promise<string> {
  const limits = tenantLimits(tenant);
  // Without a budget there is nothing to subtract from: no ledger read (this runs on every cache hit).
  if (limits.daily === undefined && limits.monthly === undefined && limits.total === undefined) return "unlimited";
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
