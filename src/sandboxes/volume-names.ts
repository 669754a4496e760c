// Volume names are the tenant's own. The upstream addresses a volume by id or by name within the whole account, so the
// gateway gives each tenant its own name space there: a tenant's `data` is `<tenant>.data` upstream (tenant ids hold no
// '.', so no two tenants' names meet), and answers show the tenant its own name back. A name never moves a volume:
// claims are first-come (src/state/types.ts OwnershipRegistry.claim), and a key that is not the caller's id or name
// answers 404 like any other foreign id.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { Upstream, upstreamJson } from "../upstream/upstream.js";
import { jsonBody, setJsonBody } from "../routing/json-body.js";
import { callerTenant } from "../identity/caller.js";
import type { Handlers } from "../routing/handlers.js";

/** The upstream's longest volume name. */
const NAME_MAX = 63;

/** The tenant's `name` as the upstream knows it. */
function upstreamVolumeName(tenant: string, name: string): string {
  const scoped = `${tenant}.${name}`;
  if (scoped.length > NAME_MAX)
    throw new GatewayError(400, "invalid_params", `name may be at most ${NAME_MAX - tenant.length - 1} characters for this tenant.`, {
      field: "name",
    });
  return scoped;
}

/** A volume record as its tenant sees it: its own name, without the gateway's scope. */
function unscoped(tenant: string, record: unknown): unknown {
  if (!record || typeof record !== "object" || Array.isArray(record)) return record;
  const r = record as Record<string, unknown>;
  const prefix = `${tenant}.`;
  return typeof r.name === "string" && r.name.startsWith(prefix) ? { ...r, name: r.name.slice(prefix.length) } : r;
}

/** An answer (one volume, a `{volumes: […]}` page, or a bare list) with every volume's name unscoped. */
async function unscopedAnswer(tenant: string, res: Response): Promise<Response> {
  if (!res.ok) return Upstream.relay(res);
  const body = await upstreamJson(res);
  let out: unknown;
  if (Array.isArray(body)) out = body.map((v) => unscoped(tenant, v));
  else if (body && typeof body === "object" && Array.isArray((body as { volumes?: unknown }).volumes))
    out = { ...(body as object), volumes: (body as { volumes: unknown[] }).volumes.map((v) => unscoped(tenant, v)) };
  else out = unscoped(tenant, body);
  return jsonResponse(res.status, out);
}

/**
 * The upstream key for a volume the caller names by id or by its own name, or undefined when it is neither (404).
 * Used by the chain's owner step for rows whose `owns` is `{ kind: "volume", byName: true }`.
 */
export async function ownedVolumeKey(services: Pick<GatewayServices, "stores">, tenant: string, key: string): Promise<string | undefined> {
  if ((await services.stores.ownership.owner("volume", key)) === tenant) return key;
  const scoped = `${tenant}.${key}`;
  if (scoped.length <= NAME_MAX && (await services.stores.ownership.owner("volume", scoped)) === tenant) return scoped;
  return undefined;
}

declare module "hono" {
  interface ContextVariableMap {
    /** The upstream key of the volume the path names (its id, or the tenant's name scoped). */
    volumeKey: string;
  }
}

export function volumeHandlers(services: GatewayServices, common: Handlers): Handlers {
  return {
    "volume.create": async (c, row) => {
      const tenant = callerTenant(c).id;
      const body = (await jsonBody(c, services.platform)).json;
      const scopedName = upstreamVolumeName(tenant, String(body.name));
      setJsonBody(c, { ...body, name: scopedName });
      const res = await common["owned.create"]!(c, row);
      // The name is claimed with the id (DELETE /api/volume/<name> addresses it), first come first served.
      if (res.ok && !(await services.stores.ownership.claim("volume", scopedName, tenant)))
        throw new GatewayError(409, "resource_conflict", "This volume name cannot be used; choose another.", { field: "name" });
      const account = c.get("upstreamAccount");
      if (res.ok && account !== undefined) await services.upstream.accounts?.remember("volume", scopedName, account);
      return unscopedAnswer(tenant, res);
    },

    "volume.list": async (c, row) => unscopedAnswer(callerTenant(c).id, await common["owned.list"]!(c, row)),

    "volume.byKey": async (c: Context<GatewayEnv>) => {
      const tenant = callerTenant(c).id;
      const key = c.get("volumeKey") ?? c.req.param("id")!;
      const res = await services.upstream.call(c, { method: c.req.method, path: `/api/volume/${encodeURIComponent(key)}` });
      return unscopedAnswer(tenant, res);
    },
  };
}
