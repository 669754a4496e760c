// Keyless access, the HTTP face of ../actions/tokens.ts: a tenant mints short-lived tokens scoped to one sandbox, one
// session or a capped search budget, hands them to an untrusted client, and can revoke them at once. Mounted under
// /_tollgate/tokens.
import type { Context } from "hono";
import type { GatewayEnv } from "../../context.js";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import type { Tenant } from "../../identity/tenants.js";
import { publicOriginOf } from "../../web/public-origin.js";
import { jsonBody } from "../../routing/json-body.js";
import type { PlatformSpeed } from "../../web/speed.js";
import { callerTenant } from "../../identity/caller.js";
import { hashTenantKey, keyIdOf } from "../../identity/tenants.js";
import type { Handlers } from "../../routing/handlers.js";
import { mintKeylessToken, revokeKeylessToken, revokeTenantToken } from "../actions/tokens.js";
import { mintRequest, type MintRequest } from "../../routing/admin-schemas.js";

/** A mint or revoke request is a few hundred bytes (a token is under 1 KiB). */
const TOKEN_BODY_LIMIT = 16 * 1024;

async function readMintRequest(c: Context, platform: PlatformSpeed): Promise<MintRequest> {
  const parsed = mintRequest.safeParse((await jsonBody(c, platform, TOKEN_BODY_LIMIT)).json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "body";
    throw new GatewayError(400, "invalid_token_request", `${field}: ${issue.message}`, { field });
  }
  return parsed.data;
}

/** The tokens rows (a tenant key caller, a gateway token refused 403 tenant_key_required: src/routing/own-rows.ts). */
export function tokenHandlers(services: GatewayServices): Handlers {
  const revoked = (c: Context<GatewayEnv>, tenant: Tenant, jti: string) => {
    services.logger.info("token revoked", { requestId: c.get("requestId"), tenant: tenant.id, jti });
    return c.json({ revoked: true, jti });
  };

  return {
    "own.tokens.mint": async (c) => {
      const caller = c.get("caller");
      const parentKey = caller.via === "key" ? keyIdOf(await hashTenantKey(caller.presented)) : undefined;
      const by = { requestId: c.get("requestId"), origin: publicOriginOf(c, services), ...(parentKey ? { parentKey } : {}) };
      return c.json(await mintKeylessToken(services, by, callerTenant(c), await readMintRequest(c, services.platform)), 201);
    },
    "own.tokens.revoke": async (c) => {
      const tenant = callerTenant(c);
      const jti = c.req.param("jti") ?? "";
      await revokeKeylessToken(services, tenant, jti);
      return revoked(c, tenant, jti);
    },
    // Revoke by the token itself (any token this gateway signed for the tenant, also one handed out in a response).
    "own.tokens.revokeByToken": async (c) => {
      const tenant = callerTenant(c);
      const token = (await jsonBody(c, services.platform, TOKEN_BODY_LIMIT)).json.token;
      if (typeof token !== "string" || !token)
        throw new GatewayError(400, "invalid_token_request", "token: expected the token to revoke", { field: "token" });
      const { jti } = await revokeTenantToken(services, tenant, token);
      return revoked(c, tenant, jti);
    },
  };
}
