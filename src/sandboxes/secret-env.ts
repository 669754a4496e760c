// Placeholders in sandboxes (docs/secrets-for-agents.md): every process, exec and terminal a tenant starts through the
// gateway gets, in its env, `NAME=tg_sec_…` for each of the tenant's secrets that reach the sandbox (a placeholder
// bound to that sandbox and secret: src/identity/tenant-secrets.ts) and `TOLLGATE_EGRESS=<public origin>/_tollgate/egress`,
// where a request carrying the placeholder gets the value swapped in towards the secret's hosts only (./egress.ts).
// The value itself never enters the sandbox. A secret with `sandboxes: "on-request"` reaches a process only when its
// env asks for it (`NAME: "tollgate:secret"`).
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { callerTenant } from "../identity/caller.js";
import { SECRET_REQUEST } from "../identity/tenant-secrets.js";
import { publicOriginOf } from "../web/public-origin.js";
import { jsonBody } from "../routing/json-body.js";
import { upstreamJson } from "../upstream/upstream.js";
import { SANDBOX_ENDED, SandboxDetail } from "./wire.js";

/** Whether a sandbox is live and the tenant's: its placeholders are refused once it ended (stopped, expired, seen ended). */
export async function sandboxLive(services: GatewayServices, tenant: string, id: string): Promise<boolean> {
  if ((await services.stores.ownership.owner("sandbox", id)) !== tenant) return false;
  const record = (await services.stores.ownership.records("sandbox", tenant)).find((r) => r.id === id);
  return record?.active === true;
}

/**
 * The body of an exec, a process start or a terminal with the placeholders and TOLLGATE_EGRESS in its env (the
 * client's own entries kept, but a secret's name is the gateway's).
 */
export async function withSecretEnv(services: GatewayServices, c: Context<GatewayEnv>, sandboxId: string): Promise<Uint8Array> {
  const json = { ...(await jsonBody(c, services.platform)).json };
  const given = json.env;
  if (given !== undefined && (given === null || typeof given !== "object" || Array.isArray(given)))
    throw new GatewayError(400, "invalid_params", "env: expected an object of names and string values.", { field: "env" });
  const env = { ...(given as Record<string, unknown> | undefined) };
  const requested = new Set(Object.keys(env).filter((k) => env[k] === SECRET_REQUEST));
  for (const k of requested) delete env[k];
  const placeholders = await services.vault.placeholders(callerTenant(c).id, sandboxId, requested);
  json.env = { ...env, ...placeholders, TOLLGATE_EGRESS: `${publicOriginOf(c, services)}/_tollgate/egress` };
  return new TextEncoder().encode(JSON.stringify(json));
}

/**
 * The sandbox's egress floor (docs/secrets-for-agents.md): a create or network-update body for the upstream with every
 * host of the tenant's secrets added to its `denyOut`, so that a process in the sandbox reaches those hosts only through
 * the egress (which holds the value), never directly. The client's own entries are kept; a body clearing the list (the
 * SDK's clearNetwork) still gets the floor.
 */
export async function withEgressFloor(
  services: GatewayServices,
  tenant: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  // The upstream's entries are addresses, ranges and host names, without ports (src/web/egress-rules.ts): a secret's
  // `host:port` denies the whole host, which only the egress then reaches.
  const hosts = await floorHosts(services, tenant);
  if (!hosts.length) return body;
  const given = Array.isArray(body.denyOut) ? body.denyOut.filter((d): d is string => typeof d === "string") : [];
  return { ...body, denyOut: [...new Set([...given, ...hosts])] };
}

/** The hosts a tenant's sandboxes are denied directly: its secrets' hosts, without ports (the upstream's entries). */
const floorHosts = async (services: GatewayServices, tenant: string) => [...new Set((await services.vault.hosts(tenant)).map(hostOnly))];

/** `host` of `host[:port]` (an IPv6 literal without its brackets). */
const hostOnly = (h: string) => (h.startsWith("[") ? h.slice(1, h.indexOf("]")) : h.replace(/:\d+$/, ""));

/** How many of a tenant's sandboxes get their floor at once when a secret's hosts are added. */
const FLOOR_FANOUT = 4;

/**
 * A secret's hosts were added (a new secret, or hosts added to one): every live sandbox of the tenant gets them in its
 * egress floor now, not only at its next network update. Each sandbox's network is read from the upstream (its detail)
 * and written back with the hosts added to its `denyOut` (the client's own entries and allow list kept); a sandbox
 * whose list already denies them is left alone. Behind the answer; each failure logged (the sandbox keeps its floor of
 * before, and gets the new hosts at its next network update through the gateway).
 */
export async function floorLiveSandboxes(services: GatewayServices, c: Context<GatewayEnv>, tenant: string): Promise<number> {
  const live = (await services.stores.ownership.records("sandbox", tenant)).filter((r) => r.active).map((r) => r.id);
  const hosts = await floorHosts(services, tenant);
  if (!live.length || !hosts.length) return 0;
  let updated = 0;
  const one = async (id: string) => {
    const path = `/api/sandbox/${encodeURIComponent(id)}`;
    const res = await services.upstream.call(c, { method: "GET", path, detachFromClient: true });
    if (!res.ok) return void (await res.body?.cancel());
    const detail = await upstreamJson(res, SandboxDetail);
    if (SANDBOX_ENDED.has(detail.status ?? "")) return;
    const net = (detail.network ?? {}) as { allowInternetAccess?: unknown; allowOut?: unknown; denyOut?: unknown };
    const deny = Array.isArray(net.denyOut) ? net.denyOut.filter((d): d is string => typeof d === "string") : [];
    if (hosts.every((h) => deny.includes(h))) return;
    const body = {
      ...(typeof net.allowInternetAccess === "boolean" ? { allowInternetAccess: net.allowInternetAccess } : {}),
      ...(Array.isArray(net.allowOut) ? { allowOut: net.allowOut } : {}),
      denyOut: [...new Set([...deny, ...hosts])],
    };
    const put = await services.upstream.call(c, {
      method: "PUT",
      path: `${path}/network`,
      headers: new Headers({ "content-type": "application/json" }),
      body: JSON.stringify(body),
      detachFromClient: true,
    });
    await put.body?.cancel();
    if (put.ok) updated++;
    else services.logger.error("egress floor not applied", { tenant, sandbox: id, status: put.status });
  };
  for (let i = 0; i < live.length; i += FLOOR_FANOUT)
    await Promise.all(
      live
        .slice(i, i + FLOOR_FANOUT)
        .map((id) =>
          one(id).catch((err: unknown) =>
            services.logger.error("egress floor not applied", { tenant, sandbox: id, error: String((err as Error)?.message ?? err) }),
          ),
        ),
    );
  return updated;
}
