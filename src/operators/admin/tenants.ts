// Admin API: tenants — list, create (with a first key, shown once), read, update, replace one section, disable,
// enable, delete. Every change is audited and applies on every instance within a second.
import type { Context } from "hono";
import type * as z from "zod";
import type { TenantConfig } from "../../../config/schema.js";
import { tenantSchema } from "../../../config/tenant-schema.js";
import type { GatewayEnv } from "../../context.js";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { audit, changeTenant, liveRecord, refuseReceivers, tenantView } from "../tenant-changes.js";
import { issueKey } from "./keys.js";
import { SECTIONS, tenantCreateBody, tenantPatchBody, type Section } from "./schemas.js";
import { validBody } from "./validate.js";
import type { Handlers, RowHandler } from "../../routing/handlers.js";

/** A new tenant with its first key (the plain key is in the answer, once). 409 when the id is taken or was deleted. */
export async function createTenant(services: GatewayServices, c: Context<GatewayEnv>, body: z.infer<typeof tenantCreateBody>) {
  const { keyLabel, keyExpiresAt, ...fields } = body;
  const issued = await issueKey(keyLabel, keyExpiresAt, services.now());
  // The config schema fills the defaults, exactly as for a tenant written in the config file.
  const tenant: TenantConfig = tenantSchema.parse({ ...fields, keys: [issued.entry] });
  refuseReceivers(services, tenant);
  const record = { tenant, source: "api" as const, updatedAt: services.now() };
  if (!(await services.stores.tenants.create(record))) {
    throw new GatewayError(409, "tenant_exists", `A tenant "${tenant.id}" exists (or was deleted; deleted ids are not reused).`);
  }
  await audit(services, c, "tenant.create", `tenant:${tenant.id}`, undefined, tenantView(record));
  await services.tenantSync.refresh();
  const { key, id: keyId } = issued.view(tenant.id);
  return { tenant: tenantView(record), key, keyId };
}

/** Enables or disables a tenant (disabling pulls its kill switch). */
export const setTenantEnabled = (services: GatewayServices, c: Context<GatewayEnv>, id: string, enabled: boolean) =>
  changeTenant(services, c, id, { action: `tenant.${enabled ? "enable" : "disable"}` }, (t) => ({ ...t, enabled }));

/** Applies a validated patch (tenantPatchBody) to a tenant. */
export const patchTenant = (services: GatewayServices, c: Context<GatewayEnv>, id: string, patch: z.infer<typeof tenantPatchBody>) =>
  changeTenant(services, c, id, { action: "tenant.update" }, (t) => ({ ...t, ...patch }) as TenantConfig);

/** The tenant rows of the admin API (src/routing/own-rows.ts); the chain has checked the operator caller. */
export function tenantAdminHandlers(services: GatewayServices): Handlers {
  const { stores } = services;
  const id = (c: Context<GatewayEnv>) => c.req.param("id") ?? "";
  const enabling =
    (enabled: boolean): RowHandler =>
    async (c) =>
      c.json(tenantView(await setTenantEnabled(services, c, id(c), enabled)));
  return {
    "admin.tenants.list": async (c) => {
      const records = (await stores.tenants.list()).filter((r) => !r.deleted);
      return c.json({ tenants: records.map(tenantView) });
    },
    "admin.tenants.create": async (c) =>
      c.json(await createTenant(services, c, await validBody(c, services.platform, tenantCreateBody)), 201),
    "admin.tenants.get": async (c) => c.json(tenantView(await liveRecord(services, id(c)))),
    "admin.tenants.patch": async (c) => {
      const r = await patchTenant(services, c, id(c), await validBody(c, services.platform, tenantPatchBody));
      return c.json(tenantView(r));
    },
    // PUT /admin/tenants/:id/<section>: the section is the path's last segment (one row per section).
    "admin.tenants.section": async (c) => {
      const section = c.req.path.slice(c.req.path.lastIndexOf("/") + 1) as Section;
      const value = await validBody(c, services.platform, SECTIONS[section]);
      const r = await changeTenant(
        services,
        c,
        id(c),
        { action: `tenant.${section}` },
        (t) => ({ ...t, [section]: value }) as TenantConfig,
      );
      return c.json(tenantView(r));
    },
    "admin.tenants.disable": enabling(false),
    "admin.tenants.enable": enabling(true),
    "admin.tenants.delete": async (c) => {
      await changeTenant(services, c, id(c), { action: "tenant.delete", remove: true });
      return c.json({ id: id(c), deleted: true });
    },
  };
}
