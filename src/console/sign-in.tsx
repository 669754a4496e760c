/** @jsxImportSource hono/jsx */
// Console sign-in: a key typed in the form, or a one-time link from `tollgate console link`, swapped for a session
// cookie (./session.ts); or a person signed in through the identity provider (OIDC authorization code + PKCE) or
// vouched for by Cloudflare Access (src/identity/sign-in.ts), audited as `oidc:<sub>` / `access:<sub>`; the session
// every other page needs (and, for a form, its token); sign-out (and, for the provider's sign-in, the provider's own
// sign-out). Another page that needs a signed-in operator or tenant (a consent page, say) uses `signedIn` or
// `requireSession` as these do.
import { deleteCookie } from "hono/cookie";
import type { GatewayServices } from "../services.js";
import { GatewayError } from "../errors.js";
import { hashTenantKey, keyIdOf, type Tenant } from "../identity/tenants.js";
import { signInKey } from "../identity/resources.js";
import { rightsOf } from "../identity/roles.js";
import { endSession, startSession, validFormToken, type ConsoleSession } from "../identity/console-session.js";
import { peekLink, redeemLink } from "../operators/actions/console-links.js";
import { asGatewayContext, type C, field, formOf, type Pages, record, render } from "./kit.js";
import { href } from "./pages/layout.js";
import { LinkPage, LoginPage, MovingOnPage } from "./pages/lists.js";
import { publicOriginOf } from "../web/public-origin.js";
import { consentSignedIn } from "../oauth/oidc-consent.js";
import { personSignedIn } from "../oauth/person-grants.js";
import {
  PROVIDER_COOKIE_PATH,
  PROVIDER_SIGN_IN_COOKIE,
  pendingProviderKey,
  providerClient,
  startProviderSignIn,
  type PendingProviderSignIn,
} from "../identity/provider-sign-in.js";
import { accessPerson, actorOf as personOf, pendingSignInState, identityTenant, type SignedInIdentity } from "../identity/sign-in.js";

/**
 * The live session and its tenant, or undefined, from the caller the chain's identify step read off the session
 * cookie: a session whose tenant is gone, disabled or no longer holds the key signed in with is ended here.
 * @public for pages outside the console's families that need the signed-in tenant (a consent page).
 */
export async function signedIn(services: GatewayServices, c: C): Promise<{ session: ConsoleSession; tenant: Tenant } | undefined> {
  const caller = asGatewayContext(c).get("caller");
  if (caller?.via !== "console") return undefined;
  if (caller.error !== undefined) throw caller.error;
  const { session, tenant } = caller;
  if (!session) return undefined;
  if (!tenant) {
    await endSession(services, c, session);
    return undefined;
  }
  return { session, tenant };
}

/**
 * The session a page needs, set as the page's viewer (and the acting tenant, which its actions are audited under),
 * or the answer instead of the page: sign in first. A form must carry the session's token; a read-only operator's
 * form is refused (sign-out aside).
 */
export async function requireSession(services: GatewayServices, c: C): Promise<Response | undefined> {
  const found = (await signedIn(services, c)) ?? (await accessSession(services, c));
  if (!found) {
    if (c.req.method === "GET" || c.req.method === "HEAD") return c.redirect(href("/login"), 303);
    throw new GatewayError(401, "unauthorized", "Your console session has ended; sign in again.");
  }
  const { session, tenant } = found;
  // One rule for every surface: a person's role is the one its claims mapped to, never its tenant's scopes.
  const { role } = rightsOf({ tenant, identity: session.identity });
  c.set("session", session);
  asGatewayContext(c).set("tenant", tenant); // the actions below are audited under this tenant
  // ... or under the person signed in through the provider, who sees their own audit lines by name.
  const person = session.identity ? personOf(session.identity) : undefined;
  if (person) asGatewayContext(c).set("actor", person);
  c.set("viewer", {
    tenant: tenant.id,
    role,
    admin: role !== "tenant",
    canEdit: role === "admin",
    csrf: session.csrf,
    ...(person && session.identity ? { who: session.identity.name ?? person, actor: person } : {}),
    ...(role !== "tenant" ? { warnings: operatorWarnings(services) } : {}),
  });
  if (c.req.method === "POST") {
    const form = await formOf(c);
    if (!validFormToken(session, form._csrf))
      throw new GatewayError(403, "csrf_token", "This form's token is missing or stale; reload the page and try again.");
    if (role === "readonly" && !c.req.path.endsWith("/logout"))
      throw new GatewayError(403, "read_only", "This is a read-only operator session: it can see everything and change nothing.");
  }
  return undefined;
}

/** What an operator must see on every page: a failed reload of the config file, a rejected upstream key. */
function operatorWarnings(services: GatewayServices): string[] {
  const out: string[] = [];
  const reload = services.configReload;
  if (reload && !reload.ok)
    out.push(
      `The last reload of ${reload.file} failed at ${new Date(reload.at).toISOString()}: the gateway serves with the config as it was. ${reload.error ?? ""}`.trim(),
    );
  for (const r of services.upstream.credentials.current())
    out.push(
      `The upstream rejects the gateway's API key (account ${r.account}, HTTP ${r.status}, since ${new Date(r.since).toISOString()}): tenants get 502 upstream_credentials_rejected until it is rotated.`,
    );
  const inbound = services.sales?.inbound.last;
  if (inbound?.mismatches.length)
    out.push(
      `${inbound.mismatches.length} sale${inbound.mismatches.length === 1 ? "" : "s"} paid by wallet buyers ${inbound.mismatches.length === 1 ? "is" : "are"} not on chain as the sales book says (checked ${inbound.at}): see GET /_tollgate/admin/sales.`,
    );
  return out;
}

/** Starts a session for `tenant` signed in with the key of `keyHash`, audited, and sends the browser to the console. */
async function begin(services: GatewayServices, c: C, tenant: Tenant, keyHash: string, via: "key" | "link") {
  await startSession(services, c, tenant.id, keyHash);
  asGatewayContext(c).set("tenant", tenant);
  await record(services, c, "console.login", `key:${tenant.id}/${keyIdOf(keyHash)}`, { via });
  return c.redirect(href(""), 303);
}

// ---- sign-in through the identity provider (OIDC authorization code + PKCE) or Cloudflare Access -------------------
const sso = (services: GatewayServices) => !!services.signIn?.oidc;

/** A session for a person the provider (or Access) vouched for, with its role; an identity with no role gets none. */
async function signInIdentity(
  services: GatewayServices,
  c: C,
  who: SignedInIdentity | undefined,
  sub: string,
  via: SignedInIdentity["via"],
): Promise<{ session: ConsoleSession; tenant: Tenant }> {
  const gc = asGatewayContext(c);
  const person = personOf({ via, sub });
  gc.set("actor", person);
  if (!who) {
    await record(services, c, "console.login.denied", `user:${person}`, { via, reason: "no_role" });
    throw new GatewayError(403, "no_role", "Your account has no role in this gateway; ask an operator to map one of your groups.");
  }
  const tenant = identityTenant(services.directory, who);
  if (!tenant) {
    await record(services, c, "console.login.denied", `user:${person}`, { via, reason: "unknown_tenant", tenant: who.tenant });
    throw new GatewayError(403, "no_role", `Your account names tenant "${who.tenant}", which is not live in this gateway.`);
  }
  const session = await startSession(services, c, tenant.id, "", who);
  gc.set("tenant", tenant);
  await record(services, c, "console.login", who.role === "tenant" ? `tenant:${tenant.id}` : `user:${personOf(who)}`, {
    via,
    role: who.role,
  });
  return { session, tenant };
}

/** Cloudflare Access in front of the console: its signed header starts a session (once; the cookie then stands for it). */
async function accessSession(services: GatewayServices, c: C): Promise<{ session: ConsoleSession; tenant: Tenant } | undefined> {
  const person = await accessPerson(services.signIn?.access, c);
  return person && signInIdentity(services, c, person.identity, person.sub, "access");
}

/** The pages open without a session: sign-in with a key, a link, or through the identity provider. */
export function signInPages(services: GatewayServices): Pages {
  return {
    "console.login.page": async (c) => {
      if ((await signedIn(services, c)) ?? (await accessSession(services, c))) return c.redirect(href(""), 303);
      return render(c, <LoginPage nonce={c.get("nonce")} sso={sso(services)} />);
    },
    "console.login": async (c) => {
      const key = field(await formOf(c), "key");
      let tenant: Tenant;
      try {
        tenant = await signInKey(services, key);
      } catch (err) {
        const message = err instanceof GatewayError && err.status === 401 ? err.message : "That key cannot sign in.";
        return render(c, <LoginPage nonce={c.get("nonce")} message={message} sso={sso(services)} />, 401);
      }
      return begin(services, c, tenant, await hashTenantKey(key), "key");
    },
    "console.link.page": async (c) => {
      const code = c.req.query("code") ?? "";
      const link = await peekLink(services, code);
      return render(c, <LinkPage nonce={c.get("nonce")} code={link ? code : undefined} tenant={link?.tenant} />, link ? 200 : 404);
    },
    "console.link": async (c) => {
      const link = await redeemLink(services, field(await formOf(c), "code"));
      const tenant = link ? services.directory.get(link.tenant) : undefined;
      if (!link || !tenant?.enabled || !tenant.keys.some((k) => k.hash === link.keyHash))
        return render(c, <LinkPage nonce={c.get("nonce")} />, 401);
      return begin(services, c, tenant, link.keyHash, "link");
    },
    "console.oidc.login": (c) => startProviderSignIn(services, c),
    "console.oidc.callback": async (c) => {
      const oidc = providerClient(services);
      const state = pendingSignInState(c, PROVIDER_SIGN_IN_COOKIE);
      deleteCookie(c, PROVIDER_SIGN_IN_COOKIE, { path: PROVIDER_COOKIE_PATH });
      const raw = state && /^[A-Za-z0-9_-]{16,128}$/.test(state) ? await services.stores.kv.get(pendingProviderKey(state)) : undefined;
      const again = (message: string, status: 400 | 401) => render(c, <LoginPage nonce={c.get("nonce")} message={message} sso />, status);
      if (!state || !raw) return again("This sign-in expired or was started in another browser; sign in again.", 400);
      await services.stores.kv.delete(pendingProviderKey(state)); // one use
      let result: Awaited<ReturnType<typeof oidc.finish>>;
      let pending: PendingProviderSignIn;
      try {
        pending = JSON.parse(raw) as PendingProviderSignIn;
        result = await oidc.finish(new URL(c.req.url), pending);
      } catch (err) {
        if (err instanceof GatewayError && err.status === 401) return again(err.message, 401);
        throw err;
      }
      // What the provider says of the person now: recorded fleet-wide, and the grants it no longer allows revoked.
      await personSignedIn(services, personOf({ via: "oidc", sub: result.sub }), result.identity);
      // Started on a consent page: back there, signed in as a tenant user's tenant (no console session).
      if (pending.consent) return consentSignedIn(services, asGatewayContext(c), result, pending.consent);
      const { tenant } = await signInIdentity(services, c, result.identity, result.sub, "oidc");
      return render(c, <MovingOnPage nonce={c.get("nonce")} title="Signed in" message={`Signed in (${tenant.id}).`} to={href("")} />);
    },
  };
}

/** Sign-out (behind the session, like every other page). */
export function signOutPages(services: GatewayServices): Pages {
  return {
    "console.logout": async (c) => {
      await record(services, c, "console.logout", `tenant:${c.get("viewer").tenant}`);
      const session = c.get("session");
      await endSession(services, c, session);
      // Signed in through the provider: its own session ends too when it advertises an end_session_endpoint.
      const oidc = services.signIn?.oidc;
      if (session.identity?.via === "oidc" && oidc) {
        const back = `${publicOriginOf(c, services)}${oidc.config.postLogoutPath ?? href("/login")}`;
        const url = await oidc.logoutUrl(back).catch(() => undefined);
        if (url) return render(c, <MovingOnPage nonce={c.get("nonce")} title="Signed out" message="Signed out of the console." to={url} />);
      }
      return c.redirect(href("/login"), 303);
    },
  };
}
