// Snapshot ownership: a snapshot belongs to the tenant whose sandbox took it; names resolve within that tenant only.
import type { WireRecord } from "../upstream/records.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import { snapshotNotFound } from "./tenant-view.js";
import { stateKeys } from "../state/keys.js";

const NAME_TTL_MS = 365 * 24 * 3600 * 1000;

/**
 * Records a snapshot the tenant just took (its id, and its name as the tenant's newest with that name), on the upstream
 * account that took it (with several accounts).
 */
export async function claimSnapshot(
  services: GatewayServices,
  tenant: Tenant,
  snapshotId: string,
  snapshotName?: string,
  account?: string,
): Promise<void> {
  await services.stores.ownership.claim("snapshot", snapshotId, tenant.id);
  if (account !== undefined) await services.upstream.accounts?.remember("snapshot", snapshotId, account);
  if (snapshotName) await services.stores.kv.set(stateKeys.snapshotName(tenant.id, snapshotName), snapshotId, NAME_TTL_MS);
}

/** The id of the tenant's snapshot named or numbered `idOrName`; anything else is "not found". */
export async function resolveOwnedSnapshot(services: GatewayServices, tenant: Tenant, idOrName: string): Promise<string> {
  if ((await services.stores.ownership.owner("snapshot", idOrName)) === tenant.id) return idOrName;
  const byName = await services.stores.kv.get(stateKeys.snapshotName(tenant.id, idOrName));
  if (byName && (await services.stores.ownership.owner("snapshot", byName)) === tenant.id) return byName;
  throw snapshotNotFound(idOrName);
}

/**
 * A create-from-snapshot body, pinned to the tenant's own snapshot: `snapshotId` must be theirs, and a bare name is
 * pinned to the id of their newest snapshot with that name.
 */
export async function pinSnapshotSource(services: GatewayServices, tenant: Tenant, body: WireRecord): Promise<void> {
  if (typeof body.snapshotName !== "string" || !body.snapshotName) return;
  if (typeof body.snapshotId === "string" && body.snapshotId) {
    if ((await services.stores.ownership.owner("snapshot", body.snapshotId)) !== tenant.id)
      throw snapshotNotFound(`${body.snapshotName} (${body.snapshotId})`);
    return;
  }
  body.snapshotId = await resolveOwnedSnapshot(services, tenant, body.snapshotName);
}
