// OAuth grants as the tenant and the operators see them: per tenant, with the client, the cap and what was spent under
// it, the last use; revocable by the tenant (its key, or the console) and by an operator (the admin API). Revoking a
// grant revokes every token it minted or will mint, through the token service's fleet-wide revocation: open MCP
// sessions are refused at their next message, refreshes at once.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { RowHandler } from "../routing/handlers.js";
import { callerTenant } from "../identity/caller.js";
import { atomicToUsd, capLedgerTenant } from "../payments/index.js";
import { audit } from "../operators/actions/tenant-changes.js";
import { actorOf } from "../operators/http/actor.js";
import { kvOAuthStore, type OAuthGrant, type OAuthStore } from "../state/oauth.js";

/** How long past its expiry a grant's revocation is kept (longer than any of its tokens lives). */
const REVOCATION_MARGIN_MS = 2 * 86_400_000;
const GRANT_ID = /^grt_[A-Za-z0-9_-]{24}$/;

/** Revokes a grant: its record says so, and every token carrying it is refused fleet-wide from now on. */
export async function revokeGrant(
  services: GatewayServices,
  store: OAuthStore,
  id: string,
  reason: string,
): Promise<OAuthGrant | undefined> {
  const grant = await store.getGrant(id);
  const now = services.now();
  const until = (grant ? grant.expiresAt - now : services.config.oauth.maxGrantDays * 86_400_000) + REVOCATION_MARGIN_MS;
  // First the tokens (the part that matters), then the record.
  await services.tokens.revokeGrant(id, until);
  if (grant && !grant.revokedAt) await store.putGrant({ ...grant, revokedAt: now, revokedReason: reason }, false);
  services.logger.info("oauth grant revoked", { grant: id, tenant: grant?.tenant, reason });
  return grant;
}

/** Neither revoked nor expired at `now`. */
export const liveGrant = (g: OAuthGrant, now: number) => !g.revokedAt && g.expiresAt > now;

/** Revokes every live grant a person consented (an operator's action); the grants revoked. */
async function revokePersonGrants(services: GatewayServices, person: string, reason: string): Promise<OAuthGrant[]> {
  const store = kvOAuthStore(services.stores.kv);
  const now = services.now();
  const grants = (await store.listPersonGrants(person)).filter((g) => liveGrant(g, now));
  for (const g of grants) await revokeGrant(services, store, g.id, reason);
  return grants;
}

/** A grant as listed: its client, cap, what was spent in the cap's window and in all, its state and last use. */
async function grantView(services: GatewayServices, g: OAuthGrant) {
  const capTenant = capLedgerTenant(g.id);
  const [usage, newest] = await Promise.all([
    services.stores.ledger.usage(capTenant, services.now()),
    services.stores.ledger.list({ tenant: capTenant, limit: 1 }),
  ]);
  const lastSpend = newest[0]?.createdAt ?? 0;
  const state = g.revokedAt ? "revoked" : g.expiresAt <= services.now() ? "expired" : "active";
  return {
    id: g.id,
    tenant: g.tenant,
    state,
    client: { id: g.clientId, name: g.clientName, redirectHost: g.redirectHost },
    scopes: g.scopes,
    ...(g.tools ? { tools: g.tools } : {}),
    ...(g.agentPolicy ? { agentPolicy: g.agentPolicy } : {}),
    ...(g.person
      ? { consentedBy: { person: g.person, role: g.personRole ?? "tenant" } }
      : g.parentKey
        ? { consentedBy: { key: g.parentKey } }
        : {}),
    cap: atomicToUsd(BigInt(g.cap)),
    window: g.capWindow,
    spent: atomicToUsd(usage[g.capWindow]),
    spentTotal: atomicToUsd(usage.total),
    resource: g.resource,
    createdAt: new Date(g.createdAt).toISOString(),
    expiresAt: new Date(g.expiresAt).toISOString(),
    lastUsedAt: new Date(Math.max(g.refreshedAt, lastSpend)).toISOString(),
    tokensIssued: g.issued,
    ...(g.revokedAt ? { revokedAt: new Date(g.revokedAt).toISOString(), revokedReason: g.revokedReason } : {}),
  };
}

type GrantView = Awaited<ReturnType<typeof grantView>>;

/** A tenant's grants, newest first. */
export async function tenantGrants(services: GatewayServices, tenant: string): Promise<GrantView[]> {
  const store = kvOAuthStore(services.stores.kv);
  return Promise.all((await store.listGrants(tenant)).map((g) => grantView(services, g)));
}

/** The grants a person (`oidc:<sub>`) consented, of every tenant, newest first. */
async function personGrants(services: GatewayServices, person: string): Promise<GrantView[]> {
  const store = kvOAuthStore(services.stores.kv);
  return Promise.all((await store.listPersonGrants(person)).map((g) => grantView(services, g)));
}

/** A person as the admin API names one: the audit log's actor for a provider's subject, `oidc:<sub>`. */
function personParam(value: string | undefined): string {
  if (!value || !/^oidc:[\x21-\x7e]{1,255}$/.test(value))
    throw new GatewayError(400, "invalid_params", "person: the person as the audit log names them, oidc:<sub>.", { field: "person" });
  return value;
}

/** Revokes one of `tenant`'s grants (any tenant's when undefined: an operator); another tenant's answers 404. */
export async function revokeTenantGrant(services: GatewayServices, c: Context<GatewayEnv>, id: string, tenant: string | undefined) {
  const store = kvOAuthStore(services.stores.kv);
  const grant = GRANT_ID.test(id) ? await store.getGrant(id) : undefined;
  if (!grant || (tenant !== undefined && grant.tenant !== tenant)) throw new GatewayError(404, "not_found", `No grant ${id}.`);
  await revokeGrant(services, store, id, tenant === undefined ? "revoked by an operator" : "revoked by the tenant");
  await audit(services, actorOf(c), "grant.revoke", `grant:${grant.tenant}/${id}`, undefined, { client: grant.clientId });
  return grantView(services, (await store.getGrant(id)) ?? grant);
}

/** The grants rows: the tenant's own (a tenant key), and the admin API's (an operator key). */
export function grantHandlers(services: GatewayServices): Record<string, RowHandler> {
  return {
    "own.grants": async (c) => c.json({ grants: await tenantGrants(services, callerTenant(c).id) }),
    "own.grants.revoke": async (c) => c.json(await revokeTenantGrant(services, c, c.req.param("id") ?? "", callerTenant(c).id)),
    "admin.grants": async (c) => {
      const tenant = c.req.query("tenant");
      const person = c.req.query("person");
      if (person !== undefined && !tenant) return c.json({ grants: await personGrants(services, personParam(person)) });
      if (!tenant)
        throw new GatewayError(400, "invalid_params", "tenant: name the tenant whose grants to list (or person=oidc:<sub>).", {
          field: "tenant",
        });
      if (!services.directory.get(tenant)) throw new GatewayError(404, "not_found", `No tenant ${tenant}.`);
      return c.json({ grants: await tenantGrants(services, tenant) });
    },
    "admin.grants.revoke": async (c) => c.json(await revokeTenantGrant(services, c, c.req.param("id") ?? "", undefined)),
    "admin.grants.revokePerson": async (c) => {
      const person = personParam(c.req.query("person"));
      const revoked = await revokePersonGrants(services, person, "revoked by an operator: everything the person consented");
      await audit(services, actorOf(c), "grant.revoke.person", `user:${person}`, undefined, { grants: revoked.map((g) => g.id) });
      const store = kvOAuthStore(services.stores.kv);
      const views = await Promise.all(revoked.map(async (g) => grantView(services, (await store.getGrant(g.id)) ?? g)));
      return c.json({ person, revoked: views });
    },
  };
}
