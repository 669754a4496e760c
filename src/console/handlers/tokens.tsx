/** @jsxImportSource hono/jsx */
// The console's keyless tokens (a tenant's own, signed in with its key): list, mint and revoke through
// ../../operators/actions/tokens.ts, as POST /_tollgate/tokens does.
import type { GatewayServices } from "../../services.js";
import { keyIdOf, type Tenant } from "../../identity/tenants.js";
import { GatewayError } from "../../errors.js";
import { publicOriginOf } from "../../web/public-origin.js";
import { listedTokens, mintKeylessToken, revokeKeylessToken } from "../../operators/actions/tokens.js";
import { mintRequest } from "../../routing/admin-schemas.js";
import { href } from "../pages/layout.js";
import { TokensPage } from "../pages/lists.js";
import {
  actor,
  asGatewayContext,
  type C,
  field,
  formOf,
  formValue,
  numberField,
  type Pages,
  param,
  record,
  render,
  RESOURCE_ID,
  withoutUndefined,
} from "../kit.js";

export function tokenPages(services: GatewayServices): Pages {
  const { stores, directory } = services;

  const tokenTenant = (c: C): Tenant => {
    const v = c.get("viewer");
    if (v.role !== "tenant") throw new GatewayError(404, "not_found", "Keyless tokens are minted by a tenant signed in with its own key.");
    return directory.get(v.tenant)!;
  };

  async function tokensPage(c: C, minted?: { jti: string; token: string; kind: string }, status: 200 | 201 = 200) {
    const tenant = tokenTenant(c);
    const revoked = c.req.query("revoked");
    const notice = revoked && RESOURCE_ID.test(revoked) ? `Revoked token ${revoked}.` : undefined;
    const owned: Array<{ kind: "sandbox" | "session"; id: string }> = [];
    for (const kind of ["sandbox", "session"] as const)
      for (const id of (await stores.ownership.list(kind, tenant.id)).slice(0, 20)) owned.push({ kind, id });
    return render(
      c,
      <TokensPage
        viewer={c.get("viewer")}
        nonce={c.get("nonce")}
        tenant={tenant}
        tokens={await listedTokens(services, tenant.id)}
        resources={owned}
        maxTtlMinutes={Math.max(1, Math.floor(services.config.tokens.ttlSeconds / 60))}
        now={services.now()}
        notice={notice}
        minted={minted}
      />,
      status,
    );
  }

  return {
    "console.tokens": (c) => tokensPage(c),

    "console.tokens.mint": async (c) => {
      const tenant = tokenTenant(c);
      const form = await formOf(c);
      const target = field(form, "target");
      const minutes = numberField(form, "ttlMinutes");
      const ttlSeconds = typeof minutes === "number" ? Math.round(minutes * 60) : minutes;
      const [kind, id] = target.includes(":")
        ? [target.slice(0, target.indexOf(":")), target.slice(target.indexOf(":") + 1)]
        : [target, ""];
      const request =
        kind === "sandbox"
          ? { kind, sandboxId: id, scopes: ["runtime", "terminal", "ports"], ttlSeconds }
          : kind === "session"
            ? { kind, sessionId: id, ttlSeconds }
            : { kind: "search", cap: field(form, "cap"), ttlSeconds };
      const keyHash = c.get("session").keyHash;
      const by = {
        ...actor(c),
        origin: publicOriginOf(asGatewayContext(c), services),
        ...(keyHash ? { parentKey: keyIdOf(keyHash) } : {}),
      };
      const minted = await mintKeylessToken(services, by, tenant, formValue(mintRequest, withoutUndefined(request)));
      await record(services, c, "token.mint", `tenant:${tenant.id}`, { jti: minted.jti, kind: minted.kind, expiresAt: minted.expiresAt });
      return tokensPage(c, { jti: minted.jti, token: minted.token, kind: minted.kind }, 201);
    },

    "console.tokens.revoke": async (c) => {
      const tenant = tokenTenant(c);
      const jti = param(c, "jti");
      await revokeKeylessToken(services, tenant, jti);
      await record(services, c, "token.revoke", `tenant:${tenant.id}`, { jti });
      return c.redirect(href(`/tokens?revoked=${encodeURIComponent(jti)}`), 303);
    },
  };
}
