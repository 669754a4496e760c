// Keyless access: a tenant mints short-lived tokens scoped to one sandbox, one session or a capped search budget,
// hands them to an untrusted client, and can revoke them at once. Mounted under /_tollgate/tokens.
import type { Context } from "hono";
import * as z from "zod";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { requireScope, type Tenant } from "../identity/tenants.js";
import { MCP_SCOPES, type TokenScope } from "../identity/tokens.js";
import { atomicToUsd, usdToAtomic } from "../payments/money.js";
import { tenantLimits } from "../payments/limits.js";
import type { BudgetWindow } from "../state/types.js";
import { gatewayComputerActionEndpoint, gatewayWsEndpoint } from "../sessions/rewrite.js";
import { gatewayRuntime } from "../sandboxes/rewrite.js";
import { publicOriginOf } from "../platform/public-origin.js";
import { usdAmount } from "../../config/fields.js";
import { stateKeys } from "../state/keys.js";
import { jsonBody } from "../routing/json-body.js";
import type { PlatformSpeed } from "../platform/speed.js";
import { callerTenant } from "../identity/caller.js";
import type { Handlers } from "../routing/handlers.js";

/** A mint or revoke request is a few hundred bytes (a token is under 1 KiB). */
const TOKEN_BODY_LIMIT = 16 * 1024;

const ttl = z.number().int().positive().optional();
const nonEmptyUnique = <T extends string>(values: readonly [T, ...T[]]) =>
  z
    .array(z.enum(values))
    .min(1)
    .refine((a) => new Set(a).size === a.length, { error: "scopes must not repeat" });

export const mintRequest = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("sandbox"),
    sandboxId: z.string().min(1),
    scopes: nonEmptyUnique(["runtime", "terminal", "ports"] as const),
    ttlSeconds: ttl,
  }),
  z.strictObject({
    kind: z.literal("session"),
    sessionId: z.string().min(1),
    scopes: nonEmptyUnique(["cdp", "computer"] as const).optional(),
    ttlSeconds: ttl,
  }),
  z.strictObject({ kind: z.literal("search"), cap: usdAmount, ttlSeconds: ttl }),
  // An agent's credential for the MCP endpoint (/mcp) and the rows its tools call: the tenant scopes it may act in, and
  // its own spend cap within the tenant's budget.
  z.strictObject({ kind: z.literal("mcp"), scopes: nonEmptyUnique(MCP_SCOPES), cap: usdAmount, ttlSeconds: ttl }),
]);
type MintRequest = z.infer<typeof mintRequest>;

interface MintRecord {
  tenant: string;
  exp: number;
}

async function readMintRequest(c: Context, platform: PlatformSpeed): Promise<MintRequest> {
  const parsed = mintRequest.safeParse((await jsonBody(c, platform, TOKEN_BODY_LIMIT)).json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "body";
    throw new GatewayError(400, "invalid_token_request", `${field}: ${issue.message}`, { field });
  }
  return parsed.data;
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
 * console's list. Shared by POST /_tollgate/tokens and the console.
 */
export async function mintKeylessToken(services: GatewayServices, c: Context, tenant: Tenant, req: MintRequest): Promise<MintedToken> {
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
  const origin = publicOriginOf(c, services);
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
    minted = await services.tokens.mint({ tenant: tenant.id, kind: "mcp", scopes: req.scopes, cap, ttlSeconds, keyless: true });
    extra = { scopes: req.scopes, cap: atomicToUsd(cap), capAtomic: cap.toString(), mcp: `${origin}/mcp` };
  } else {
    requireScope(tenant, "search");
    const cap = usdToAtomic(req.cap);
    if (cap <= 0n) throw new GatewayError(400, "invalid_token_request", "cap: must be more than 0", { field: "cap" });
    await refuseCapAboveBudget(services, tenant, cap);
    minted = await services.tokens.mint({ tenant: tenant.id, kind: "search", scopes: ["search"], cap, ttlSeconds, keyless: true });
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
  services.logger.info("token minted", { requestId: c.get("requestId"), tenant: tenant.id, kind: req.kind, jti: minted.jti, ttlSeconds });
  return { token: minted.token, jti: minted.jti, expiresAt: minted.expiresAt, kind: req.kind, ...extra };
}

/**
 * A token's cap is never above what its tenant's budget could pay: the least of its daily and monthly limits and what
 * remains of its total budget (a total never resets). Refused with that figure rather than clamped, so the client
 * never holds a token that promises more than it states. A tenant without a budget has no such ceiling.
 * @throws GatewayError 400 cap_above_budget
 */
async function refuseCapAboveBudget(services: GatewayServices, tenant: Tenant, cap: bigint): Promise<void> {
  const limits = tenantLimits(tenant);
  let ceiling: { limit: bigint; window: BudgetWindow } | undefined;
  for (const window of ["daily", "monthly"] as const) {
    const limit = limits[window];
    if (limit !== undefined && (!ceiling || limit < ceiling.limit)) ceiling = { limit, window };
  }
  if (limits.total !== undefined) {
    const spent = (await services.stores.ledger.usage(tenant.id, services.now())).total;
    const left = limits.total > spent ? limits.total - spent : 0n;
    if (!ceiling || left < ceiling.limit) ceiling = { limit: left, window: "total" };
  }
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

/** The tokens rows (a tenant key caller, a gateway token refused 403 tenant_key_required: src/routing/own-rows.ts). */
export function tokenHandlers(services: GatewayServices): Handlers {
  async function revoke(c: Context<GatewayEnv>, tenant: Tenant, jti: string, exp: number) {
    await services.tokens.revoke(jti, exp);
    services.logger.info("token revoked", { requestId: c.get("requestId"), tenant: tenant.id, jti });
    return c.json({ revoked: true, jti });
  }

  return {
    "own.tokens.mint": async (c) =>
      c.json(await mintKeylessToken(services, c, callerTenant(c), await readMintRequest(c, services.platform)), 201),
    "own.tokens.revoke": async (c) => {
      const tenant = callerTenant(c);
      const jti = c.req.param("jti") ?? "";
      await revokeKeylessToken(services, tenant, jti);
      services.logger.info("token revoked", { requestId: c.get("requestId"), tenant: tenant.id, jti });
      return c.json({ revoked: true, jti });
    },
    // Revoke by the token itself (any token this gateway signed for the tenant, also one handed out in a response).
    "own.tokens.revokeByToken": async (c) => {
      const tenant = callerTenant(c);
      const token = (await jsonBody(c, services.platform, TOKEN_BODY_LIMIT)).json.token;
      if (typeof token !== "string" || !token)
        throw new GatewayError(400, "invalid_token_request", "token: expected the token to revoke", { field: "token" });
      const t = await services.tokens.inspect(token);
      if (!t || t.tenant !== tenant.id) throw new GatewayError(404, "not_found", "No token of this tenant matches.");
      return revoke(c, tenant, t.jti, t.exp);
    },
  };
}
