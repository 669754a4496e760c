/** @jsxImportSource hono/jsx */
// The console's agent grants (OAuth, src/oauth/): a tenant's own, every tenant's for an operator; a grant revoked
// through src/oauth/grants.ts as the admin API's grants endpoints do.
import type { GatewayServices } from "../../services.js";
import { GatewayError } from "../../errors.js";
import { revokeTenantGrant, tenantGrants } from "../../oauth/grants.js";
import { href } from "../pages/layout.js";
import { GrantsPage } from "../pages/grants.js";
import { asGatewayContext, type Pages, param, render, RESOURCE_ID } from "../kit.js";

export function grantPages(services: GatewayServices): Pages {
  return {
    "console.grants": async (c) => {
      const viewer = c.get("viewer");
      const tenants = viewer.admin ? services.directory.list().map((t) => t.id) : [viewer.tenant];
      const grants = (await Promise.all(tenants.slice(0, 200).map((t) => tenantGrants(services, t)))).flat();
      const revoked = c.req.query("revoked");
      const notice = revoked && RESOURCE_ID.test(revoked) ? `Revoked grant ${revoked}.` : undefined;
      const canRevoke = (g: { tenant: string }) => viewer.canEdit || (viewer.role === "tenant" && g.tenant === viewer.tenant);
      return render(c, <GrantsPage viewer={viewer} nonce={c.get("nonce")} grants={grants} notice={notice} canRevoke={canRevoke} />);
    },

    "console.grants.revoke": async (c) => {
      const viewer = c.get("viewer");
      const id = param(c, "id");
      if (!viewer.canEdit && viewer.role !== "tenant")
        throw new GatewayError(403, "read_only", "A read-only operator cannot revoke grants.");
      await revokeTenantGrant(services, asGatewayContext(c), id, viewer.canEdit ? undefined : viewer.tenant);
      return c.redirect(href(`/grants?revoked=${encodeURIComponent(id)}`), 303);
    },
  };
}
