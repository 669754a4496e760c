// Keyless access: a tenant mints short-lived tokens scoped to one sandbox, one session or a capped search budget,
// hands them to an untrusted client, and can revoke them at once. Mounted under /_tollgate/tokens.
import { Hono, type Context } from "hono";
import * as z from "zod";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { presentedKey, requireScope, type Tenant } from "../tenants.js";
import { looksLikeGatewayToken, MCP_SCOPES, type TokenScope } from "../tokens.js";
import { atomicToUsd, usdToAtomic } from "../payments/money.js";
import { gatewayComputerActionEndpoint, gatewayWsEndpoint } from "../rewrite/session.js";
import { gatewayRuntime } from "../rewrite/sandbox.js";
import { publicOriginOf } from "../public-origin.js";
import { usdAmount } from "../../config/schema.js";
import { stateKeys } from "../state/keys.js";
import { jsonBody } from "../routing/body.js";

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

async function tenantKeyCaller(c: Context<GatewayEnv>, services: GatewayServices): Promise<Tenant> {
  const key = presentedKey(c.req.raw.headers);
  if (looksLikeGatewayToken(key))
    throw new GatewayError(403, "tenant_key_required", "Tokens are minted and revoked with a tenant key, not with a gateway token.");
  const tenant = await services.directory.authenticate(key);
  c.set("tenant", tenant);
  c.get("logFields").tenant = tenant.id;
  return tenant;
}

async function readMintRequest(c: Context): Promise<MintRequest> {
  const parsed = mintRequest.safeParse((await jsonBody(c, TOKEN_BODY_LIMIT)).json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "body";
    throw new GatewayError(400, "invalid_token_request", `${field}: ${issue.message}`, { field });
  }
  return parsed.data;
}

export function tokenRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const { kv, ownership } = services.stores;
  const maxTtl = services.config.tokens.ttlSeconds;

  async function requireOwner(kind: "sandbox" | "session", id: string, tenant: Tenant) {
    if ((await ownership.owner(kind, id)) !== tenant.id)
      throw new GatewayError(404, "not_found", `${kind === "sandbox" ? "Sandbox" : "Session"} ${id} not found`);
  }

  app.post("/", async (c) => {
    const tenant = await tenantKeyCaller(c, services);
    const req = await readMintRequest(c);
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
      await requireOwner("sandbox", req.sandboxId, tenant);
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
      await requireOwner("session", req.sessionId, tenant);
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
      minted = await services.tokens.mint({ tenant: tenant.id, kind: "mcp", scopes: req.scopes, cap, ttlSeconds, keyless: true });
      extra = { scopes: req.scopes, cap: atomicToUsd(cap), capAtomic: cap.toString(), mcp: `${origin}/mcp` };
    } else {
      requireScope(tenant, "search");
      const cap = usdToAtomic(req.cap);
      if (cap <= 0n) throw new GatewayError(400, "invalid_token_request", "cap: must be more than 0", { field: "cap" });
      minted = await services.tokens.mint({ tenant: tenant.id, kind: "search", scopes: ["search"], cap, ttlSeconds, keyless: true });
      extra = { scopes: ["search"], cap: atomicToUsd(cap), capAtomic: cap.toString() };
    }
    const exp = Math.floor(Date.parse(minted.expiresAt) / 1000);
    const record: MintRecord = { tenant: tenant.id, exp };
    await kv.set(stateKeys.mintedToken(minted.jti), JSON.stringify(record), Math.max(1000, exp * 1000 - services.now() + 60_000));
    services.logger.info("token minted", { requestId: c.get("requestId"), tenant: tenant.id, kind: req.kind, jti: minted.jti, ttlSeconds });
    return c.json({ token: minted.token, jti: minted.jti, expiresAt: minted.expiresAt, kind: req.kind, ...extra }, 201);
  });

  async function revoke(c: Context<GatewayEnv>, tenant: Tenant, jti: string, exp: number) {
    await services.tokens.revoke(jti, exp);
    services.logger.info("token revoked", { requestId: c.get("requestId"), tenant: tenant.id, jti });
    return c.json({ revoked: true, jti });
  }

  app.delete("/:jti", async (c) => {
    const tenant = await tenantKeyCaller(c, services);
    const jti = c.req.param("jti");
    const raw = await kv.get(stateKeys.mintedToken(jti));
    const record = raw ? (JSON.parse(raw) as MintRecord) : undefined;
    if (!record || record.tenant !== tenant.id) throw new GatewayError(404, "not_found", `No live token ${jti} minted by this tenant.`);
    return revoke(c, tenant, jti, record.exp);
  });

  // Revoke by the token itself (any token this gateway signed for the tenant, also one handed out in a response).
  app.post("/revoke", async (c) => {
    const tenant = await tenantKeyCaller(c, services);
    const token = (await jsonBody(c, TOKEN_BODY_LIMIT)).json.token;
    if (typeof token !== "string" || !token)
      throw new GatewayError(400, "invalid_token_request", "token: expected the token to revoke", { field: "token" });
    const t = await services.tokens.inspect(token);
    if (!t || t.tenant !== tenant.id) throw new GatewayError(404, "not_found", "No token of this tenant matches.");
    return revoke(c, tenant, t.jti, t.exp);
  });

  return app;
}
