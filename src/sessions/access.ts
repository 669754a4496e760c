// Who may use a browser session, and where its upstream endpoints are kept: shared by the sessions, CDP and token routes.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { TokenScope } from "../identity/tokens.js";
import type { Lineage } from "../identity/lineage.js";
import { upstreamJson } from "../upstream/upstream.js";
import { sessionEndpointsOf, type SessionEndpoints } from "./rewrite.js";
import { stateKeys } from "../state/keys.js";

const SESSION_TOKEN_SCOPES: TokenScope[] = ["cdp", "computer"];
/** Upstream endpoints are kept this long at most; a miss refetches the session detail. */
const ENDPOINTS_TTL_MS = 24 * 3600_000;

export function notFoundSession(id: string): GatewayError {
  return new GatewayError(404, "not_found", `Session ${id} not found`);
}

export async function mintSessionToken(
  services: GatewayServices,
  tenantId: string,
  id: string,
  /** `parents`: the lineage of the caller it is minted for (lineageOf): the token dies with that key and grant. */
  opts: { scopes?: TokenScope[]; ttlSeconds?: number; keyless?: boolean; parents?: Lineage } = {},
) {
  return services.tokens.mint({
    tenant: tenantId,
    kind: "session",
    resource: id,
    scopes: opts.scopes ?? SESSION_TOKEN_SCOPES,
    ttlSeconds: opts.ttlSeconds ?? services.config.tokens.ttlSeconds,
    keyless: opts.keyless,
    ...opts.parents,
  });
}

/** The ticket of a session's live view (`liveUrl`): scope `live` only, so a shared link cannot drive CDP. */
export async function mintLiveTicket(
  services: GatewayServices,
  tenantId: string,
  id: string,
  ttlSeconds?: number,
  parents?: Lineage,
): Promise<string> {
  return (await mintSessionToken(services, tenantId, id, { scopes: ["live"], ttlSeconds, parents })).token;
}

export async function saveSessionEndpoints(services: GatewayServices, id: string, e: SessionEndpoints): Promise<void> {
  if (e.wsEndpoint || e.computerActionEndpoint)
    await services.stores.kv.set(stateKeys.sessionEndpoints(id), JSON.stringify(e), ENDPOINTS_TTL_MS);
}

/** The session's upstream endpoints: from the store, or from a fresh upstream detail when they are not there. */
export async function sessionEndpoints(c: Context<GatewayEnv>, services: GatewayServices, id: string): Promise<SessionEndpoints> {
  const kept = await services.stores.kv.get(stateKeys.sessionEndpoints(id));
  if (kept) return JSON.parse(kept) as SessionEndpoints;
  const res = await services.upstream.call(c, { method: "GET", path: `/api/session/${encodeURIComponent(id)}` });
  if (res.status === 404) throw notFoundSession(id);
  if (!res.ok) throw new GatewayError(502, "upstream_error", `The upstream could not describe session ${id} (HTTP ${res.status}).`);
  const endpoints = sessionEndpointsOf(await upstreamJson(res));
  await saveSessionEndpoints(services, id, endpoints);
  return endpoints;
}
