// The tenant's view of its sandboxes: the 404 a foreign snapshot gets, and the rewrite context (gateway tokens) it sees.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import type { SandboxRewriteContext } from "./rewrite.js";
import { GatewayError } from "../errors.js";
import { publicOriginOf } from "../web/public-origin.js";
import { lineageOf, type Lineage } from "../identity/lineage.js";

export const snapshotNotFound = (idOrName: string) => new GatewayError(404, "not_found", `Snapshot ${idOrName} not found`);

/**
 * Mints the tenant's gateway tokens for a sandbox: runtime+terminal+ports for `token`, ports only for browser links.
 * Each carries the caller's lineage (the key it came with, the grant its token belongs to): it dies with them.
 */
export function tenantRewriteContext(c: Context<GatewayEnv>, services: GatewayServices, tenant: Tenant): SandboxRewriteContext {
  const ttlSeconds = services.config.tokens.ttlSeconds;
  let lineage: Promise<Lineage> | undefined;
  const parents = () => (lineage ??= lineageOf(c.get("caller")));
  return {
    publicOrigin: publicOriginOf(c, services),
    mintRuntimeToken: async (id) =>
      services.tokens.mint({
        tenant: tenant.id,
        kind: "sandbox",
        resource: id,
        scopes: ["runtime", "terminal", "ports"],
        ttlSeconds,
        ...(await parents()),
      }),
    mintPortGrant: async (id) =>
      services.tokens.mint({ tenant: tenant.id, kind: "sandbox", resource: id, scopes: ["ports"], ttlSeconds, ...(await parents()) }),
  };
}
