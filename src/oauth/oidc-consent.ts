// The consent page's sign-in through the operators' identity provider (docs/sign-in.md): the console's OIDC flow
// (src/console/sign-in.tsx, src/identity/sign-in.ts) started with the pending authorization request as its return
// target; its callback, for a tenant user, hands the consent page a short-lived, single-use ticket bound to that
// request, naming the tenant and the person (`oidc:<sub>`). An admin, a read-only operator or an unmapped account
// consents for no tenant: a 403 page, the refusal audited. Web standards only.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import { actorOf, identityTenant, type SignedInIdentity } from "../identity/sign-in.js";
import { rightsOf } from "../identity/roles.js";
import { audit } from "../operators/actions/tenant-changes.js";
import { OAuthErrorPage, oauthHtml } from "./page.js";

/** What a ticket stands for: the tenant signed in, by whom, for which pending authorization request. */
export interface ConsentTicket {
  request: string;
  tenant: string;
  /** `oidc:<sub>`: the audit log's actor for the consent. */
  actor: string;
  /** The provider's email or name for the person, shown on the page. */
  name?: string;
}

/** A ticket is good this long (the consent form is filled in meanwhile); it is used up by the consent. */
const TICKET_TTL_MS = 10 * 60_000;
const ticketKey = (t: string) => `oauth:oidc-ticket:${t}`;
const TICKET = /^[A-Za-z0-9_-]{43}$/;

function randomTicket(): string {
  let bin = "";
  for (const b of crypto.getRandomValues(new Uint8Array(32))) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The ticket for `request`, when it is live and for that request (not used up). */
export async function peekConsentTicket(services: GatewayServices, ticket: string, request: string): Promise<ConsentTicket | undefined> {
  if (!TICKET.test(ticket)) return undefined;
  const raw = await services.stores.kv.get(ticketKey(ticket));
  const t = raw ? (JSON.parse(raw) as ConsentTicket) : undefined;
  return t?.request === request ? t : undefined;
}

/** Uses the ticket up: the first caller fleet-wide gets it, any other undefined. */
export async function takeConsentTicket(services: GatewayServices, ticket: string, request: string): Promise<ConsentTicket | undefined> {
  const t = await peekConsentTicket(services, ticket, request);
  if (!t || !(await services.stores.kv.setIfAbsent(`${ticketKey(ticket)}:used`, "1", TICKET_TTL_MS))) return undefined;
  await services.stores.kv.delete(ticketKey(ticket));
  return t;
}

/**
 * The provider's callback for a consent: a tenant user goes back to the consent page of `request` with a ticket; anyone
 * else gets a refusal page (403), audited under the person.
 */
export async function consentSignedIn(
  services: GatewayServices,
  c: Context<GatewayEnv>,
  result: { sub: string; identity?: SignedInIdentity },
  request: string,
): Promise<Response> {
  const actor = actorOf({ via: "oidc", sub: result.sub });
  const who = result.identity;
  // The same rule as every surface (roles.ts): only a tenant user connects an agent for a tenant.
  const role = who ? rightsOf({ identity: who }).role : undefined;
  const tenant = who && role === "tenant" ? identityTenant(services.directory, who) : undefined;
  if (!who || !tenant) {
    const reason = !who ? "no_role" : role !== "tenant" ? "not_a_tenant" : "unknown_tenant";
    await audit(services, { person: actor, requestId: c.get("requestId") }, "oauth.consent.denied", `user:${actor}`, undefined, {
      via: "oidc",
      reason,
      ...(who ? { role: who.role } : {}),
    });
    const message =
      reason === "no_role"
        ? "Your account has no role in this gateway; ask an operator to map one of your groups."
        : reason === "not_a_tenant"
          ? "Your account is an operator's, which connects no agent for a tenant: sign in as a tenant user, or with a tenant key."
          : `Your account names tenant "${who?.tenant}", which is not live in this gateway.`;
    return oauthHtml(OAuthErrorPage({ title: "This account cannot connect an agent", message }), 403);
  }
  const ticket = randomTicket();
  const value: ConsentTicket = { request, tenant: tenant.id, actor, ...(who.name ? { name: who.name } : {}) };
  await services.stores.kv.set(ticketKey(ticket), JSON.stringify(value), TICKET_TTL_MS);
  const back = `/authorize?${new URLSearchParams({ request, ticket })}`;
  return new Response(null, { status: 303, headers: { location: back, "cache-control": "no-store", "referrer-policy": "no-referrer" } });
}
