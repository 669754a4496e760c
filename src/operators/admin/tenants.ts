// Admin API: tenants — list, create (with a first key, shown once), read, update, replace one section, disable,
// enable, delete. Every change is audited and applies on every instance within a second.
import { Hono, type Context } from "hono";
import type * as z from "zod";
import { tenantSchema, type TenantConfig } from "../../../config/schema.js";
import type { GatewayEnv } from "../../context.js";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { audit, changeTenant, liveRecord, refuseReceivers, tenantView } from "../tenant-changes.js";
import { issueKey } from "./keys.js";
import { SECTIONS, tenantCreateBody, tenantPatchBody, type Section } from "./schemas.js";
import { validBody } from "./validate.js";

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

export function tenantAdminRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const { stores } = services;

  app.get("/tenants", async (c) => {
    const records = (await stores.tenants.list()).filter((r) => !r.deleted);
    return c.json({ tenants: records.map(tenantView) });
  });

  app.post("/tenants", async (c) => c.json(await createTenant(services, c, await validBody(c, tenantCreateBody)), 201));

  app.get("/tenants/:id", async (c) => c.json(tenantView(await liveRecord(services, c.req.param("id")))));

  app.patch("/tenants/:id", async (c) => {
    const r = await patchTenant(services, c, c.req.param("id"), await validBody(c, tenantPatchBody));
    return c.json(tenantView(r));
  });

  app.put("/tenants/:id/:section{scopes|budget|payment|quotas|alerts}", async (c) => {
    const section = c.req.param("section") as Section;
    const value = await validBody(c, SECTIONS[section]);
    const r = await changeTenant(
      services,
      c,
      c.req.param("id"),
      { action: `tenant.${section}` },
      (t) => ({ ...t, [section]: value }) as TenantConfig,
    );
    return c.json(tenantView(r));
  });

  for (const [verb, enabled] of [
    ["disable", false],
    ["enable", true],
  ] as const) {
    app.post(`/tenants/:id/${verb}`, async (c) => c.json(tenantView(await setTenantEnabled(services, c, c.req.param("id"), enabled))));
  }

  app.delete("/tenants/:id", async (c) => {
    const id = c.req.param("id");
    await changeTenant(services, c, id, { action: "tenant.delete", remove: true });
    return c.json({ id, deleted: true });
  });
  return app;
}
