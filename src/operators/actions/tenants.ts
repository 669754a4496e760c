// Tenants as operators manage them (the admin API and the console alike): list, create with a first key (shown once),
// read, update, replace one section, disable, enable, delete. Every change goes through ./tenant-changes.ts: audited,
// applied on every instance within a second, the kill switch pulled when a tenant is disabled or deleted.
import type * as z from "zod";
import type { TenantConfig } from "../../../config/schema.js";
import { tenantSchema } from "../../../config/tenant-schema.js";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import type { StoredTenant } from "../../state/types.js";
import type { SECTIONS, Section, tenantCreateBody, tenantPatchBody } from "../../routing/admin-schemas.js";
import type { Actor } from "./actor.js";
import { issueKey } from "./keys.js";
import { audit, changeTenant, liveRecord, refuseReceivers, tenantView } from "./tenant-changes.js";

/** Every live tenant as the admin API shows it (deleted ones left out). */
export async function listTenants(services: GatewayServices) {
  const records = (await services.stores.tenants.list()).filter((r) => !r.deleted);
  return records.map(tenantView);
}

/** A live tenant as the admin API shows it, or 404. */
export async function readTenant(services: GatewayServices, id: string) {
  return tenantView(await liveRecord(services, id));
}

/** A new tenant with its first key (the plain key is in the answer, once). 409 when the id is taken or was deleted. */
export async function createTenant(services: GatewayServices, by: Actor, body: z.infer<typeof tenantCreateBody>) {
  const { keyLabel, keyExpiresAt, ...fields } = body;
  const issued = await issueKey(keyLabel, keyExpiresAt, services.now());
  // The config schema fills the defaults, exactly as for a tenant written in the config file.
  const tenant: TenantConfig = tenantSchema.parse({ ...fields, keys: [issued.entry] });
  refuseReceivers(services, tenant);
  const record = { tenant, source: "api" as const, updatedAt: services.now() };
  if (!(await services.stores.tenants.create(record))) {
    throw new GatewayError(409, "tenant_exists", `A tenant "${tenant.id}" exists (or was deleted; deleted ids are not reused).`);
  }
  await audit(services, by, "tenant.create", `tenant:${tenant.id}`, undefined, tenantView(record));
  await services.tenantSync.refresh();
  const { key, id: keyId } = issued.view(tenant.id);
  return { tenant: tenantView(record), key, keyId };
}

/** Enables or disables a tenant (disabling pulls its kill switch). */
export const setTenantEnabled = (services: GatewayServices, by: Actor, id: string, enabled: boolean): Promise<StoredTenant> =>
  changeTenant(services, by, id, { action: `tenant.${enabled ? "enable" : "disable"}` }, (t) => ({ ...t, enabled }));

/** Applies a validated patch (tenantPatchBody) to a tenant. */
export const patchTenant = (services: GatewayServices, by: Actor, id: string, patch: z.infer<typeof tenantPatchBody>) =>
  changeTenant(services, by, id, { action: "tenant.update" }, (t) => ({ ...t, ...patch }) as TenantConfig);

/** Replaces one section of a tenant (budget, payment, quotas, alerts…) with a validated value. */
export const setTenantSection = <S extends Section>(
  services: GatewayServices,
  by: Actor,
  id: string,
  section: S,
  value: z.infer<(typeof SECTIONS)[S]>,
) => changeTenant(services, by, id, { action: `tenant.${section}` }, (t) => ({ ...t, [section]: value }) as TenantConfig);

/** Deletes a tenant: a tombstone stays, so the config file does not bring it back (its kill switch is pulled). */
export async function deleteTenant(services: GatewayServices, by: Actor, id: string) {
  await changeTenant(services, by, id, { action: "tenant.delete", remove: true });
  return { id, deleted: true };
}
