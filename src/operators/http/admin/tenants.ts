// Admin API: tenants — list, create (with a first key, shown once), read, update, replace one section, disable,
// enable, delete. The HTTP face of ../../actions/tenants.ts: every change is audited and applies on every instance
// within a second.
import type { Context } from "hono";
import type { GatewayEnv } from "../../../context.js";
import type { GatewayServices } from "../../../services.js";
import {
  createTenant,
  deleteTenant,
  listTenants,
  patchTenant,
  readTenant,
  setTenantEnabled,
  setTenantSection,
} from "../../actions/tenants.js";
import { tenantView } from "../../actions/tenant-changes.js";
import { actorOf } from "../actor.js";
import { SECTIONS, tenantCreateBody, tenantPatchBody, type Section } from "../../../routing/admin-schemas.js";
import { validBody } from "./validate.js";
import type { Handlers, RowHandler } from "../../../routing/handlers.js";

/** The tenant rows of the admin API (src/routing/own-rows.ts); the chain has checked the operator caller. */
export function tenantAdminHandlers(services: GatewayServices): Handlers {
  const id = (c: Context<GatewayEnv>) => c.req.param("id") ?? "";
  const enabling =
    (enabled: boolean): RowHandler =>
    async (c) =>
      c.json(tenantView(await setTenantEnabled(services, actorOf(c), id(c), enabled)));
  return {
    "admin.tenants.list": async (c) => c.json({ tenants: await listTenants(services) }),
    "admin.tenants.create": async (c) =>
      c.json(await createTenant(services, actorOf(c), await validBody(c, services.platform, tenantCreateBody)), 201),
    "admin.tenants.get": async (c) => c.json(await readTenant(services, id(c))),
    "admin.tenants.patch": async (c) => {
      const r = await patchTenant(services, actorOf(c), id(c), await validBody(c, services.platform, tenantPatchBody));
      return c.json(tenantView(r));
    },
    // PUT /admin/tenants/:id/<section>: the section is the path's last segment (one row per section).
    "admin.tenants.section": async (c) => {
      const section = c.req.path.slice(c.req.path.lastIndexOf("/") + 1) as Section;
      const value = await validBody(c, services.platform, SECTIONS[section]);
      return c.json(tenantView(await setTenantSection(services, actorOf(c), id(c), section, value)));
    },
    "admin.tenants.disable": enabling(false),
    "admin.tenants.enable": enabling(true),
    "admin.tenants.delete": async (c) => c.json(await deleteTenant(services, actorOf(c), id(c))),
  };
}
