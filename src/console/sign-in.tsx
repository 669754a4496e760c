/** @jsxImportSource hono/jsx */
// Console sign-in: a key typed in the form, or a one-time link from `tollgate console link`, swapped for a session
// cookie (./session.ts); the session every other page needs (and, for a form, its token); sign-out. Another page
// that needs a signed-in operator or tenant (a consent page, say) uses `signedIn` or `requireSession` as these do.
import type { GatewayServices } from "../services.js";
import { GatewayError } from "../errors.js";
import { hashTenantKey, keyIdOf, type Tenant } from "../identity/tenants.js";
import { signInKey } from "../identity/resources.js";
import { roleOf } from "../identity/roles.js";
import { endSession, startSession, validFormToken, type ConsoleSession } from "../identity/console-session.js";
import { peekLink, redeemLink } from "./link.js";
import { asGatewayContext, type C, field, formOf, type Pages, record, render } from "./kit.js";
import { href } from "./pages/layout.js";
import { LinkPage, LoginPage } from "./pages/lists.js";

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
  const found = await signedIn(services, c);
  if (!found) {
    if (c.req.method === "GET" || c.req.method === "HEAD") return c.redirect(href("/login"), 303);
    throw new GatewayError(401, "unauthorized", "Your console session has ended; sign in again.");
  }
  const { session, tenant } = found;
  const role = roleOf(tenant);
  c.set("session", session);
  asGatewayContext(c).set("tenant", tenant); // the actions below are audited under this tenant
  c.set("viewer", { tenant: tenant.id, role, admin: role !== "tenant", canEdit: role === "admin", csrf: session.csrf });
  if (c.req.method === "POST") {
    const form = await formOf(c);
    if (!validFormToken(session, form._csrf))
      throw new GatewayError(403, "csrf_token", "This form's token is missing or stale; reload the page and try again.");
    if (role === "readonly" && !c.req.path.endsWith("/logout"))
      throw new GatewayError(403, "read_only", "This is a read-only operator session: it can see everything and change nothing.");
  }
  return undefined;
}

/** Starts a session for `tenant` signed in with the key of `keyHash`, audited, and sends the browser to the console. */
async function begin(services: GatewayServices, c: C, tenant: Tenant, keyHash: string, via: "key" | "link") {
  await startSession(services, c, tenant.id, keyHash);
  asGatewayContext(c).set("tenant", tenant);
  await record(services, c, "console.login", `key:${tenant.id}/${keyIdOf(keyHash)}`, { via });
  return c.redirect(href(""), 303);
}

/** The pages open without a session: sign-in with a key or a link. */
export function signInPages(services: GatewayServices): Pages {
  return {
    "console.login.page": async (c) => {
      if (await signedIn(services, c)) return c.redirect(href(""), 303);
      return render(c, <LoginPage nonce={c.get("nonce")} />);
    },
    "console.login": async (c) => {
      const key = field(await formOf(c), "key");
      let tenant: Tenant;
      try {
        tenant = await signInKey(services, key);
      } catch (err) {
        const message = err instanceof GatewayError && err.status === 401 ? err.message : "That key cannot sign in.";
        return render(c, <LoginPage nonce={c.get("nonce")} message={message} />, 401);
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
  };
}

/** Sign-out (behind the session, like every other page). */
export function signOutPages(services: GatewayServices): Pages {
  return {
    "console.logout": async (c) => {
      await record(services, c, "console.logout", `tenant:${c.get("viewer").tenant}`);
      await endSession(services, c, c.get("session"));
      return c.redirect(href("/login"), 303);
    },
  };
}
