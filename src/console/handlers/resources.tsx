/** @jsxImportSource hono/jsx */
// The console's live sandboxes and sessions of the visible tenants, and Stop (through the same steps as the gateway's
// own stop routes: ../resources.ts).
import type { GatewayServices } from "../../services.js";
import { GatewayError } from "../../errors.js";
import { liveResources, stopResource, type LiveKind } from "../resources.js";
import { href } from "../pages/layout.js";
import { ResourcesPage } from "../pages/lists.js";
import { type Pages, param, record, render, RESOURCE_ID, visibleTenant, visibleTenants } from "../kit.js";

export function resourcePages(services: GatewayServices): Pages {
  return {
    "console.resources": async (c) => {
      const resources = await liveResources(
        services,
        visibleTenants(services, c).map((t) => t.id),
      );
      const stopped = c.req.query("stopped");
      const notice =
        stopped && /^(sandbox|session):/.test(stopped) && RESOURCE_ID.test(stopped) ? `Stopped ${stopped.replace(":", " ")}.` : undefined;
      return render(c, <ResourcesPage viewer={c.get("viewer")} nonce={c.get("nonce")} resources={resources} notice={notice} />);
    },

    "console.resources.stop": async (c) => {
      const kind: LiveKind = c.req.path.startsWith(href("/resources/sandbox/")) ? "sandbox" : "session";
      const id = param(c, "id");
      const owner = RESOURCE_ID.test(id) ? await services.stores.ownership.owner(kind, id) : undefined;
      if (!owner) throw new GatewayError(404, "not_found", `No ${kind} "${id}" here.`);
      visibleTenant(services, c, owner);
      const status = await stopResource(services, kind, id, c);
      if (status !== 200 && status !== 404 && status !== 409)
        throw new GatewayError(502, "upstream_error", `The upstream would not stop ${kind} ${id} (${status}); try again.`);
      await record(services, c, "resource.stop", `${kind}:${owner}/${id}`, { status });
      return c.redirect(href(`/resources?stopped=${kind}:${encodeURIComponent(id)}`), 303);
    },
  };
}
