// Keyless access as a tenant manages it (the tokens API and the console alike): short-lived tokens scoped to one
// sandbox, one session, a capped search budget or an agent's MCP calls, handed to an untrusted client, listed, and
// revoked at once.
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { requireScope, type Tenant } from "../../identity/tenants.js";
import type { TokenScope } from "../../identity/tokens.js";
import { atomicToUsd, spendCeiling, usdToAtomic } from "../../payments/index.js";
import { gatewayComputerActionEndpoint, gatewayWsEndpoint } from "../../sessions/rewrite.js";
import { gatewayRuntime } from "../../sandboxes/rewrite.js";
import { stateKeys } from "../../state/keys.js";
import type { Actor } from "./actor.js";
import type { MintRequest } from "../../routing/admin-schemas.js";

interface MintRecord {
  tenant: string;
  exp: number;
}

/** What the tokens API and the console answer for a minted keyless token. */
export type MintedToken = { token: string; jti: string; expiresAt: string; kind: MintRequest["kind"] } & Record<string, unknown>;

/** The tenant's newest keyless tokens (for the console's list): at most this many, expired ones dropped. */
const LISTED_TOKENS = 50;
const listedKey = (tenant: string) => `tokens:listed:${tenant}`;

export interface ListedToken {
  jti: string;
  kind: string;
  resource?: string;
  cap?: string;
  exp: number;
  mintedAt: number;
}

/** The tenant's live keyless tokens, newest first (a display list; revocation goes by the token's own record). */
export async function listedTokens(services: GatewayServices, tenant: string): Promise<ListedToken[]> {
  const raw = await services.stores.kv.get(listedKey(tenant));
  const now = Math.floor(services.now() / 1000);
  return raw ? (JSON.parse(raw) as ListedToken[]).filter((t) => t.exp > now) : [];
}

/**
 * Mints a keyless token for `tenant` (scopes and ownership checked here), records it for revocation and for the
 * console's list. Shared by POST /_tollgate/tokens and the console. `by.origin` is the gateway's public origin as the
 * request saw it: where the URLs the answer hands out (a sandbox's runtime, a session's wsEndpoint, /mcp) point.
 * `by.parentKey`: the id of the key the request came with (the token is refused once the tenant no longer holds it).
 */
export async function mintKeylessToken(
  services: GatewayServices,
  by: Actor & { origin: string; parentKey?: string },
  tenant: Tenant,
  req: MintRequest,
): Promise<MintedToken> {
  // The credential tree: a token minted with a key (or a console session opened with one) dies with that key.
  const parent = by.parentKey ? { parentKey: by.parentKey } : {};
  const { kv, ownership } = services.stores;
  const maxTtl = services.config.tokens.ttlSeconds;
  async function requireOwner(kind: "sandbox" | "session", id: string) {
    if ((await ownership.owner(kind, id)) !== tenant.id)
      throw new GatewayError(404, "not_found", `${kind === "sandbox" ? "Sandbox" : "Session"} ${id} not found`);
  }
  const ttlSeconds = req.ttlSeconds ?? maxTtl;
  if (ttlSeconds > maxTtl)
    throw new GatewayError(400, "token_ttl_too_long", `ttlSeconds may be at most ${maxTtl} (tokens.ttlSeconds).`, {
      limit: maxTtl,
      requested: ttlSeconds,
    });
  const { origin } = by;
  let minted: Awaited<ReturnType<typeof services.tokens.mint>>;
  let extra: Record<string, unknown>;
  if (req.kind === "sandbox") {
    requireScope(tenant, "sandboxes");
    await requireOwner("sandbox", req.sandboxId);
    minted = await services.tokens.mint({
      tenant: tenant.id,
      kind: "sandbox",
      resource: req.sandboxId,
      scopes: req.scopes,
      ttlSeconds,
      keyless: true,
      ...parent,
    });
    extra = { resource: req.sandboxId, scopes: req.scopes, runtime: gatewayRuntime(origin, req.sandboxId) };
  } else if (req.kind === "session") {
    requireScope(tenant, "sessions");
    await requireOwner("session", req.sessionId);
    const scopes: TokenScope[] = req.scopes ?? ["cdp", "computer"];
    minted = await services.tokens.mint({
      tenant: tenant.id,
      kind: "session",
      resource: req.sessionId,
      scopes,
      ttlSeconds,
      keyless: true,
      ...parent,
    });
    extra = {
      resource: req.sessionId,
      scopes,
      ...(scopes.includes("cdp") ? { wsEndpoint: gatewayWsEndpoint(origin, req.sessionId, minted.token) } : {}),
      ...(scopes.includes("computer") ? { computerActionEndpoint: gatewayComputerActionEndpoint(origin, req.sessionId) } : {}),
    };
  } else if (req.kind === "mcp") {
    for (const scope of req.scopes) requireScope(tenant, scope);
    const cap = usdToAtomic(req.cap);
    if (cap <= 0n) throw new GatewayError(400, "invalid_token_request", "cap: must be more than 0", { field: "cap" });
    await refuseCapAboveBudget(services, tenant, cap);
    minted = await services.tokens.mint({
      tenant: tenant.id,
      kind: "mcp",
      scopes: req.scopes,
      cap,
      ttlSeconds,
      keyless: true,
      ...parent,
      ...(req.policy ? { policy: req.policy } : {}),
    });
    extra = { scopes: req.scopes, cap: atomicToUsd(cap), capAtomic: cap.toString(), mcp: `${origin}/mcp` };
  } else {
    requireScope(tenant, "search");
    const cap = usdToAtomic(req.cap);
    if (cap <= 0n) throw new GatewayError(400, "invalid_token_request", "cap: must be more than 0", { field: "cap" });
    await refuseCapAboveBudget(services, tenant, cap);
    minted = await services.tokens.mint({
      tenant: tenant.id,
      kind: "search",
      scopes: ["search"],
      cap,
      ttlSeconds,
      keyless: true,
      ...parent,
      ...(req.policy ? { policy: req.policy } : {}),
    });
    extra = { scopes: ["search"], cap: atomicToUsd(cap), capAtomic: cap.toString() };
  }
  const exp = Math.floor(Date.parse(minted.expiresAt) / 1000);
  const record: MintRecord = { tenant: tenant.id, exp };
  await kv.set(stateKeys.mintedToken(minted.jti), JSON.stringify(record), Math.max(1000, exp * 1000 - services.now() + 60_000));
  const listed: ListedToken = {
    jti: minted.jti,
    kind: req.kind,
    exp,
    mintedAt: services.now(),
    ...(typeof extra.resource === "string" ? { resource: extra.resource } : {}),
    ...(typeof extra.cap === "string" ? { cap: extra.cap } : {}),
  };
  const list = [listed, ...(await listedTokens(services, tenant.id))].slice(0, LISTED_TOKENS);
  await kv.set(listedKey(tenant.id), JSON.stringify(list), maxTtl * 1000 + 60_000);
  services.logger.info("token minted", { requestId: by.requestId, tenant: tenant.id, kind: req.kind, jti: minted.jti, ttlSeconds });
  return { token: minted.token, jti: minted.jti, expiresAt: minted.expiresAt, kind: req.kind, ...extra };
}

/**
 * A token's cap is never above what its tenant's budget could pay: the least of its daily and monthly limits and what
 * remains of its total budget (a total never resets). Refused with that figure rather than clamped, so the client
 * never holds a token that promises more than it states. A tenant without a budget has no such ceiling.
 * @throws GatewayError 400 cap_above_budget
 */
async function refuseCapAboveBudget(services: GatewayServices, tenant: Tenant, cap: bigint): Promise<void> {
  const ceiling = await spendCeiling(services, tenant);
  if (!ceiling || cap <= ceiling.limit) return;
  const what = ceiling.window === "total" ? "what remains of its total budget" : `its ${ceiling.window} budget`;
  throw new GatewayError(
    400,
    "cap_above_budget",
    `cap: $${atomicToUsd(cap)} is above what the tenant's budget can pay, $${atomicToUsd(ceiling.limit)} (${what}); ask for at most that.`,
    { field: "cap", limit: atomicToUsd(ceiling.limit), window: ceiling.window },
  );
}

/** Revokes a keyless token the tenant minted; 404 when it has none live by that id. */
export async function revokeKeylessToken(services: GatewayServices, tenant: Tenant, jti: string): Promise<void> {
  const raw = await services.stores.kv.get(stateKeys.mintedToken(jti));
  const record = raw ? (JSON.parse(raw) as MintRecord) : undefined;
  if (!record || record.tenant !== tenant.id) throw new GatewayError(404, "not_found", `No live token ${jti} minted by this tenant.`);
  await services.tokens.revoke(jti, record.exp);
}

/** Revokes any token this gateway signed for the tenant, by the token itself; 404 when it is none of the tenant's. */
export async function revokeTenantToken(services: GatewayServices, tenant: Tenant, token: string): Promise<{ jti: string }> {
  const t = await services.tokens.inspect(token);
  if (!t || t.tenant !== tenant.id) throw new GatewayError(404, "not_found", "No token of this tenant matches.");
  await services.tokens.revoke(t.jti, t.exp);
  return { jti: t.jti };
}
