// What every TenantStore backend shares: the seeding rule, written once.
import type { StoredTenant } from "./types.js";

/** Whether a config-file record may replace what is stored: nothing there, or an unchanged config-made record. */
export function seedReplaces(existing: StoredTenant | undefined, incoming: StoredTenant): boolean {
  if (!existing) return true;
  if (existing.source !== "config" || existing.deleted) return false;
  return JSON.stringify(existing.tenant) !== JSON.stringify(incoming.tenant);
}
