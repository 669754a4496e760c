/** @jsxImportSource hono/jsx */
// The operator console at /_tollgate/console: server-rendered pages over the same state the admin API reads, and
// changes made through the admin API's own schemas and functions (src/operators/admin/*). Roles: an admin key sees and
// changes every tenant; an operator-readonly key sees every tenant and changes nothing; a tenant key sees only itself
// (another tenant's pages and resources are 404) and manages its own keys and keyless tokens. Sign-in swaps a key, or a
// one-time link from `tollgate console link`, for a session cookie; every form carries the session's token and must
// come from the console's own origin; every change is in the audit log. The pages are one row of the route table
// (`console.pages`, src/routing/own-rows.ts): the chain's identify step reads the session cookie, and the row's handler
// runs these pages with that caller (their own error pages, CSRF check and page headers included).
import { signInKey } from "../identity/resources.js";
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import type { Child } from "hono/jsx";
import type * as z from "zod";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { hashTenantKey, keyIdOf, type Tenant } from "../identity/tenants.js";
import { isStateUnavailable } from "../state/errors.js";
import { SPEND_KINDS, type LedgerEntry, type LedgerState, type SpendKind } from "../state/types.js";
import { publicOriginOf } from "../platform/public-origin.js";
import { atomicToUsd } from "../payments/money.js";
import { audit } from "../operators/tenant-changes.js";
import { roleOf } from "../identity/roles.js";
import { lastUsed } from "../identity/key-usage.js";
import { createKey, revokeKey, rotateKey } from "../operators/admin/keys.js";
import { createTenant, patchTenant, setTenantEnabled } from "../operators/admin/tenants.js";
import { keyCreateBody, keyRotateBody, tenantCreateBody, tenantPatchBody } from "../operators/admin/schemas.js";
import { auditPage, concernsTenant, ledgerSurface, SURFACES } from "../operators/admin/views.js";
import { listedTokens, mintKeylessToken, mintRequest, revokeKeylessToken } from "../operators/token-routes.js";
import { CONSOLE_PATH, endSession, startSession, validFormToken, type ConsoleSession } from "../identity/console-session.js";
import type { Handlers } from "../routing/handlers.js";
import type { HandlerName } from "../routing/handler-names.js";
import { peekLink, redeemLink } from "./link.js";
import { liveResources, stopResource, type LiveKind } from "./resources.js";
import { spendHistory, tenantSpend } from "./spend.js";
import { fleetSavings } from "../operators/savings.js";
import { ErrorPage, href, managesKeysOf, type Viewer } from "./pages/layout.js";
import { OverviewPage } from "./pages/overview.js";
import { TenantPage } from "./pages/tenant.js";
import { AuditPage } from "./pages/audit.js";
import { GrantsPage } from "./pages/grants.js";
import { revokeTenantGrant, tenantGrants } from "../oauth/grants.js";
import { KeysPage, LedgerPage, LinkPage, LoginPage, MovingOnPage, ResourcesPage, TokensPage, type LedgerFilters } from "./pages/lists.js";
import { getCookie, setCookie, deleteCookie } from "hono/cookie";
import { ACCESS_HEADER, actorOf, identityTenant, type PendingSignIn, type SignedInIdentity } from "../identity/sign-in.js";

type ConsoleEnv = { Variables: { nonce: string; session: ConsoleSession; viewer: Viewer } };
type C = Context<ConsoleEnv>;
/** The admin changes (../operators/tenant-changes.ts) read the acting tenant and request id, which a console context has. */
const asGatewayContext = (c: C) => c as unknown as Context<GatewayEnv>;

const STATES: LedgerState[] = ["reserved", "committed", "released", "uncertain"];
const LEDGER_SCAN = 10_000;
const AUDIT_SCAN = 500;
const RESOURCE_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
/** Keys a tenant may hold when it creates them itself (an admin is not bound by it). */
const SELF_SERVICE_KEYS = 20;

const pick = <T extends string>(value: string | undefined, allowed: readonly T[]): T | undefined =>
  allowed.includes(value as T) ? (value as T) : undefined;

type Form = Record<string, string | File | Array<string | File>>;

/** The posted form's fields (repeated ones as arrays); a body that is no form is a 400 page, not a crash. */
async function formOf(c: C): Promise<Form> {
  try {
    // Hono keeps the first parse: every caller asks for the same shape.
    return (await c.req.parseBody({ all: true })) as Form;
  } catch {
    throw new GatewayError(400, "invalid_form", "This form could not be read; reload the page and try again.");
  }
}

/** One text field, trimmed ("" when absent or a file). */
const field = (form: Form, name: string): string => {
  const v = form[name];
  const one = Array.isArray(v) ? v[0] : v;
  return typeof one === "string" ? one.trim() : "";
};
const fields = (form: Form, name: string): string[] => {
  const v = form[name];
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === "string");
};
/** A number field: undefined when blank, NaN-free numbers otherwise (the schema says what is wrong with them). */
const numberField = (form: Form, name: string): number | string | undefined => {
  const v = field(form, name);
  if (!v) return undefined;
  return /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
};
const withoutUndefined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ""));

/** Runs a zod schema over a form's values; a problem is a 400 naming the field, as the admin API would. */
function formValue<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success)
    throw new GatewayError(
      400,
      "invalid_form",
      r.error.issues.map((i) => `${i.path.map(String).join(".") || "form"}: ${i.message}`).join("; "),
    );
  return r.data;
}

function render(c: C, node: Child, status: 200 | 201 | 400 | 401 | 403 | 404 | 409 | 502 | 503 = 200) {
  return c.html(`<!doctype html>${node}`, status);
}

/** Nonce for the one inline script, and headers that keep the pages out of frames and caches. */
const pageHeaders: MiddlewareHandler<ConsoleEnv> = async function consolePageHeaders(c, next) {
  let bin = "";
  for (const b of crypto.getRandomValues(new Uint8Array(16))) bin += String.fromCharCode(b);
  const nonce = btoa(bin);
  c.set("nonce", nonce);
  await next();
  c.header(
    "content-security-policy",
    `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  );
  c.header("x-frame-options", "DENY");
  c.header("x-content-type-options", "nosniff");
  // Not no-referrer: under it browsers send `Origin: null` with forms, and the origin check would refuse them.
  c.header("referrer-policy", "same-origin");
  c.header("cache-control", "no-store");
};

/** A CSV cell: quoted when needed, and never read as a formula by a spreadsheet. */
function csvCell(v: unknown): string {
  let s = v === undefined || v === null ? "" : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const CSV_COLUMNS = ["createdAt", "tenant", "id", "route", "surface", "kind", "state", "amountUsd", "transaction", "resource", "reason"];
function ledgerCsv(entries: LedgerEntry[]): string {
  const rows = entries.map((e) =>
    [
      new Date(e.createdAt).toISOString(),
      e.tenant,
      e.id,
      e.route,
      ledgerSurface(e),
      e.kind ?? "x402",
      e.state,
      atomicToUsd(BigInt(e.amount)),
      e.transaction,
      e.resource,
      e.reason,
    ]
      .map(csvCell)
      .join(","),
  );
  return `${[CSV_COLUMNS.join(","), ...rows].join("\r\n")}\r\n`;
}

type Page = (c: C) => Response | Promise<Response>;
const asConsoleContext = (c: Context<GatewayEnv>) => c as unknown as C;
/** A path parameter of the page's row ("" when the row has none by that name). */
const param = (c: C, name: string): string => c.req.param(name) ?? "";

/**
 * The console's rows (src/routing/own-rows.ts, caller "console"), mounted by the chain (`mount`: middleware/chain.ts's
 * mountRouteTable) on a sub-app of their own, which answers any refusal with the console's HTML error page and gives
 * every page its headers and the origin check on forms.
 * @example app.route("/", consolePages(services, (pages, handlers) => mountRouteTable(pages, services, handlers, rows)))
 */
export function consolePages(services: GatewayServices, mount: (pages: Hono<GatewayEnv>, handlers: Handlers) => void): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.onError((err, gc) => {
    const c = asConsoleContext(gc);
    let status = 503;
    let message = "The console could not complete this request; try again shortly.";
    if (err instanceof GatewayError) [status, message] = [err.status, err.message];
    else if (err instanceof HTTPException)
      [status, message] = [err.status, err.status === 403 ? "This form was not sent from the console's own page." : err.message];
    else if (isStateUnavailable(err)) message = "The gateway's shared state store is unreachable; try again shortly.";
    else services.logger.error("console error", { requestId: gc.get("requestId"), error: String((err as Error)?.stack ?? err) });
    const code = ([400, 401, 403, 404, 409, 502, 503] as const).find((s) => s === status) ?? 503;
    return render(c, <ErrorPage status={code} message={message} viewer={c.get("viewer")} nonce={c.get("nonce") ?? ""} />, code);
  });
  app.use(
    `${CONSOLE_PATH}/*`,
    pageHeaders as unknown as MiddlewareHandler<GatewayEnv>,
    // Forms must come from this origin (the request's own, or the configured public one behind a proxy).
    csrf({ origin: (origin, c) => origin === new URL(c.req.url).origin || origin === publicOriginOf(c, services) }),
  );
  mount(app, consoleHandlers(services));
  return app;
}

/** Every console page's handler by name: the sign-in pages open, the others behind a live session. */
function consoleHandlers(services: GatewayServices): Handlers {
  const { stores, directory } = services;
  const open: Partial<Record<HandlerName, Page>> = {};
  const pages: Partial<Record<HandlerName, Page>> = {};

  /** Records a console action in the audit log, under the tenant acting. */
  const record = (c: C, action: string, target: string, after?: unknown) =>
    audit(services, asGatewayContext(c), action, target, undefined, after);

  // ---- sign-in: a key typed in the form, or a one-time link ------------------------------------------------------
  open["console.login.page"] = async (c) => {
    if ((await signedIn(c)) ?? (await accessSession(c))) return c.redirect(href(""), 303);
    return render(c, <LoginPage nonce={c.get("nonce")} sso={!!services.signIn?.oidc} />);
  };

  open["console.login"] = async (c) => {
    const key = field(await formOf(c), "key");
    let tenant: Tenant;
    try {
      tenant = await signInKey(services, key);
    } catch (err) {
      const message = err instanceof GatewayError && err.status === 401 ? err.message : "That key cannot sign in.";
      return render(c, <LoginPage nonce={c.get("nonce")} message={message} sso={!!services.signIn?.oidc} />, 401);
    }
    const keyHash = await hashTenantKey(key);
    await startSession(services, c, tenant.id, keyHash);
    asGatewayContext(c).set("tenant", tenant);
    await record(c, "console.login", `key:${tenant.id}/${keyIdOf(keyHash)}`, { via: "key" });
    return c.redirect(href(""), 303);
  };

  open["console.link.page"] = async (c) => {
    const code = c.req.query("code") ?? "";
    const link = await peekLink(services, code);
    return render(c, <LinkPage nonce={c.get("nonce")} code={link ? code : undefined} tenant={link?.tenant} />, link ? 200 : 404);
  };

  open["console.link"] = async (c) => {
    const link = await redeemLink(services, field(await formOf(c), "code"));
    const tenant = link ? directory.get(link.tenant) : undefined;
    if (!link || !tenant?.enabled || !tenant.keys.some((k) => k.hash === link.keyHash))
      return render(c, <LinkPage nonce={c.get("nonce")} />, 401);
    await startSession(services, c, tenant.id, link.keyHash);
    asGatewayContext(c).set("tenant", tenant);
    await record(c, "console.login", `key:${tenant.id}/${keyIdOf(link.keyHash)}`, { via: "link" });
    return c.redirect(href(""), 303);
  };

  // ---- sign-in through the identity provider (OIDC authorization code + PKCE) or Cloudflare Access -----------------
  const OIDC_COOKIE = "tollgate_oidc";
  const OIDC_TTL_MS = 10 * 60_000;
  const pendingKey = (state: string) => `console:oidc:${state}`;
  const oidcClient = () => {
    const oidc = services.signIn?.oidc;
    if (!oidc) throw new GatewayError(404, "not_found", "Sign-in through an identity provider is not configured here ([operators.oidc]).");
    return oidc;
  };
  const callbackUri = (c: C) => `${publicOriginOf(c, services)}${href("/oidc/callback")}`;

  /** A session for a person the provider (or Access) vouched for, with its role; an identity with no role gets none. */
  async function signInIdentity(c: C, who: SignedInIdentity | undefined, sub: string, via: SignedInIdentity["via"]) {
    const gc = asGatewayContext(c);
    gc.set("actor", actorOf({ via, sub }));
    if (!who) {
      await record(c, "console.login.denied", `user:${actorOf({ via, sub })}`, { via, reason: "no_role" });
      throw new GatewayError(403, "no_role", "Your account has no role in this gateway; ask an operator to map one of your groups.");
    }
    const tenant = identityTenant(directory, who);
    if (!tenant) {
      await record(c, "console.login.denied", `user:${actorOf(who)}`, { via, reason: "unknown_tenant", tenant: who.tenant });
      throw new GatewayError(403, "no_role", `Your account names tenant "${who.tenant}", which is not live in this gateway.`);
    }
    const session = await startSession(services, c, tenant.id, "", who);
    gc.set("tenant", tenant);
    await record(c, "console.login", who.role === "tenant" ? `tenant:${tenant.id}` : `user:${actorOf(who)}`, { via, role: who.role });
    return { session, tenant };
  }

  open["console.oidc.login"] = async (c) => {
    const oidc = oidcClient();
    const { url, pending } = await oidc.start(callbackUri(c));
    await stores.kv.set(pendingKey(pending.state), JSON.stringify(pending), OIDC_TTL_MS);
    // Lax: the provider's redirect back is a top-level GET from another site, which a Strict cookie would miss.
    setCookie(c, OIDC_COOKIE, pending.state, {
      path: href("/oidc"),
      httpOnly: true,
      sameSite: "Lax",
      secure: callbackUri(c).startsWith("https:"),
      maxAge: OIDC_TTL_MS / 1000,
    });
    return c.redirect(url, 302);
  };

  open["console.oidc.callback"] = async (c) => {
    const oidc = oidcClient();
    const state = getCookie(c, OIDC_COOKIE);
    deleteCookie(c, OIDC_COOKIE, { path: href("/oidc") });
    const raw = state && /^[A-Za-z0-9_-]{16,128}$/.test(state) ? await stores.kv.get(pendingKey(state)) : undefined;
    const again = (message: string, status: 400 | 401) => render(c, <LoginPage nonce={c.get("nonce")} message={message} sso />, status);
    if (!raw) return again("This sign-in expired or was started in another browser; sign in again.", 400);
    await stores.kv.delete(pendingKey(state!)); // one use
    let result: Awaited<ReturnType<typeof oidc.finish>>;
    try {
      result = await oidc.finish(new URL(c.req.url), JSON.parse(raw) as PendingSignIn);
    } catch (err) {
      if (err instanceof GatewayError && err.status === 401) return again(err.message, 401);
      throw err;
    }
    const { tenant } = await signInIdentity(c, result.identity, result.sub, "oidc");
    return render(c, <MovingOnPage nonce={c.get("nonce")} title="Signed in" message={`Signed in (${tenant.id}).`} to={href("")} />);
  };

  /** Cloudflare Access in front of the console: its signed header starts a session (once; the cookie then stands for it). */
  async function accessSession(c: C): Promise<{ session: ConsoleSession; tenant: Tenant } | undefined> {
    const access = services.signIn?.access;
    const assertion = access ? c.req.header(ACCESS_HEADER) : undefined;
    if (!access || !assertion) return undefined;
    const { sub, identity } = await access.verify(assertion);
    return signInIdentity(c, identity, sub, "access");
  }

  /**
   * The live session's viewer, or undefined, from the caller the chain's identify step read off the session cookie: a
   * session whose tenant is gone, disabled or no longer holds the key signed in with is ended here.
   */
  async function signedIn(c: C): Promise<{ session: ConsoleSession; tenant: Tenant } | undefined> {
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

  // ---- everything else needs a session (and, for a form, its token) ------------------------------------------------
  /** The session a page needs (set as the viewer), or the answer instead of the page: sign in first. */
  async function consoleSession(c: C): Promise<Response | undefined> {
    const found = (await signedIn(c)) ?? (await accessSession(c));
    if (!found) {
      if (c.req.method === "GET" || c.req.method === "HEAD") return c.redirect(href("/login"), 303);
      throw new GatewayError(401, "unauthorized", "Your console session has ended; sign in again.");
    }
    const { session, tenant } = found;
    const role = roleOf(tenant);
    c.set("session", session);
    asGatewayContext(c).set("tenant", tenant); // the actions below are audited under this tenant
    const who = session.identity ? (session.identity.name ?? actorOf(session.identity)) : undefined;
    if (session.identity) asGatewayContext(c).set("actor", actorOf(session.identity));
    c.set("viewer", {
      tenant: tenant.id,
      role,
      admin: role !== "tenant",
      canEdit: role === "admin",
      csrf: session.csrf,
      ...(who && session.identity ? { who, actor: actorOf(session.identity) } : {}),
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

  pages["console.logout"] = async (c) => {
    await record(c, "console.logout", `tenant:${c.get("viewer").tenant}`);
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
  };

  const visibleTenants = (c: C): Tenant[] => {
    const v = c.get("viewer");
    return v.admin ? directory.list().sort((a, b) => a.id.localeCompare(b.id)) : [directory.get(v.tenant)!];
  };
  /** A tenant the viewer may see, or 404 (a tenant key cannot tell another tenant's resources exist). */
  const visibleTenant = (c: C, id: string): Tenant => {
    const v = c.get("viewer");
    const t = v.admin || id === v.tenant ? directory.get(id) : undefined;
    if (!t) throw new GatewayError(404, "not_found", `No tenant "${id}" here.`);
    return t;
  };
  const requireAdmin = (c: C) => {
    if (!c.get("viewer").canEdit) throw new GatewayError(403, "missing_scope", "Only an admin key can do this.");
  };
  /** The tenant whose keys the viewer may manage (an admin any, a tenant its own), or 404/403. */
  const keyTenant = (c: C, id: string): Tenant => {
    const t = visibleTenant(c, id);
    if (!managesKeysOf(c.get("viewer"), t.id)) throw new GatewayError(403, "missing_scope", "Only an admin key can do this.");
    return t;
  };

  // ---- overview and tenants ------------------------------------------------------------------------------------------
  async function overview(
    c: C,
    extra: { issued?: { tenant: string; id: string; key: string }; formError?: string } = {},
    status: 200 | 201 | 400 | 409 = 200,
  ) {
    const tenants = visibleTenants(c);
    const viewer = c.get("viewer");
    const spends = await Promise.all(
      tenants
        .filter((t) => !viewer.admin || !t.scopes.includes("admin") || t.budget.daily || t.budget.monthly || t.budget.total)
        .map((t) => tenantSpend(services, t)),
    );
    const live = { sandboxes: 0, sessions: 0 };
    for (const t of tenants) {
      live.sandboxes += await stores.ownership.activeCount("sandbox", t.id);
      live.sessions += await stores.ownership.activeCount("session", t.id);
    }
    const ids = tenants.map((t) => t.id);
    const [savings, history] = await Promise.all([
      fleetSavings(services, ids),
      spendHistory(services, ids, viewer.admin ? undefined : viewer.tenant),
    ]);
    return render(
      c,
      <OverviewPage viewer={viewer} nonce={c.get("nonce")} spends={spends} savings={savings} live={live} history={history} {...extra} />,
      status,
    );
  }

  pages["console.overview"] = (c) => overview(c);

  pages["console.tenants.create"] = async (c) => {
    requireAdmin(c);
    const form = await formOf(c);
    const value = withoutUndefined({
      id: field(form, "id"),
      scopes: fields(form, "scopes"),
      budget: withoutUndefined({ daily: field(form, "budget.daily"), monthly: field(form, "budget.monthly") }),
      quotas: withoutUndefined({ requestsPerMinute: numberField(form, "quotas.requestsPerMinute") }),
      keyLabel: field(form, "keyLabel"),
    });
    let created: Awaited<ReturnType<typeof createTenant>>;
    try {
      created = await createTenant(services, asGatewayContext(c), formValue(tenantCreateBody, value));
    } catch (err) {
      if (err instanceof GatewayError && (err.status === 400 || err.status === 409))
        return overview(c, { formError: err.message }, err.status);
      throw err;
    }
    return overview(c, { issued: { tenant: created.tenant.id, id: created.keyId, key: created.key } }, 201);
  };

  async function tenantPage(c: C, tenant: Tenant, extra: { notice?: string; formError?: string } = {}, status: 200 | 400 | 409 = 200) {
    const [spend, resources, ledger, auditLog, savings, history, used] = await Promise.all([
      tenantSpend(services, tenant),
      liveResources(services, [tenant.id]),
      stores.ledger.list({ tenant: tenant.id, limit: 10 }),
      stores.audit.list({ limit: AUDIT_SCAN }),
      fleetSavings(services, [tenant.id]),
      spendHistory(services, [tenant.id], tenant.id),
      lastUsed(
        services,
        tenant.keys.map((k) => k.hash),
      ),
    ]);
    const own = auditLog.filter((e) => concernsTenant(e.target, tenant.id)).slice(0, 20);
    return render(
      c,
      <TenantPage
        viewer={c.get("viewer")}
        nonce={c.get("nonce")}
        spend={spend}
        savings={savings}
        thresholds={services.config.alerts.thresholds}
        resources={resources}
        ledger={ledger}
        audit={own}
        history={history}
        lastUsed={used}
        now={services.now()}
        {...extra}
      />,
      status,
    );
  }

  pages["console.tenant"] = async (c) => {
    const tenant = visibleTenant(c, param(c, "id"));
    const saved = c.req.query("saved");
    const notice =
      saved === "settings"
        ? "Settings saved."
        : saved === "enable"
          ? "Tenant enabled."
          : saved === "disable"
            ? "Tenant disabled."
            : undefined;
    return tenantPage(c, tenant, { notice });
  };

  pages["console.tenant.settings"] = async (c) => {
    requireAdmin(c);
    const tenant = visibleTenant(c, param(c, "id"));
    const form = await formOf(c);
    const thresholds = field(form, "alerts.thresholds");
    const webhooks = field(form, "alerts.webhooks")
      .split(/\r?\n/)
      .map((s) => s.trim())
      .filter(Boolean);
    const patch = {
      scopes: fields(form, "scopes"),
      budget: withoutUndefined({
        daily: field(form, "budget.daily"),
        monthly: field(form, "budget.monthly"),
        total: field(form, "budget.total"),
      }),
      // Quotas the form does not show (images, regions) are kept as they are.
      quotas: withoutUndefined({
        ...tenant.quotas,
        requestsPerMinute: numberField(form, "quotas.requestsPerMinute"),
        maxSandboxes: numberField(form, "quotas.maxSandboxes"),
        maxSessions: numberField(form, "quotas.maxSessions"),
        maxTimeoutMinutes: numberField(form, "quotas.maxTimeoutMinutes"),
      }),
      onExhausted: field(form, "onExhausted"),
      alerts: withoutUndefined({
        thresholds: thresholds
          ? thresholds
              .split(/[\s,]+/)
              .filter(Boolean)
              .map((t) => (/^\d+(\.\d+)?$/.test(t) ? Number(t) : t))
          : undefined,
        webhooks: webhooks.length ? webhooks : undefined,
      }),
    };
    try {
      await patchTenant(services, asGatewayContext(c), tenant.id, formValue(tenantPatchBody, patch));
    } catch (err) {
      if (err instanceof GatewayError && (err.status === 400 || err.status === 409))
        return tenantPage(c, tenant, { formError: err.message }, err.status);
      throw err;
    }
    return c.redirect(href(`/tenants/${encodeURIComponent(tenant.id)}?saved=settings`), 303);
  };

  pages["console.tenant.enabled"] = async (c) => {
    requireAdmin(c);
    const tenant = visibleTenant(c, param(c, "id"));
    const verb = c.req.path.endsWith("/enable") ? "enable" : "disable";
    await setTenantEnabled(services, asGatewayContext(c), tenant.id, verb === "enable");
    return c.redirect(href(`/tenants/${encodeURIComponent(tenant.id)}?saved=${verb}`), 303);
  };

  // ---- ledger --------------------------------------------------------------------------------------------------------
  async function ledgerRows(c: C): Promise<{ filters: LedgerFilters; matching: LedgerEntry[] }> {
    const viewer = c.get("viewer");
    const q = c.req.query();
    const limit = Math.min(1000, Math.max(1, Math.floor(Number(q.limit)) || 100));
    const offset = Math.max(0, Math.floor(Number(q.offset)) || 0);
    const filters: LedgerFilters = {
      tenant: viewer.admin ? q.tenant || undefined : viewer.tenant,
      state: pick(q.state, STATES),
      kind: pick(q.kind, SPEND_KINDS as readonly SpendKind[]),
      surface: pick(q.surface, SURFACES),
      from: DAY.test(q.from ?? "") && !Number.isNaN(Date.parse(q.from!)) ? q.from : undefined,
      to: DAY.test(q.to ?? "") && !Number.isNaN(Date.parse(q.to!)) ? q.to : undefined,
      limit,
      offset,
    };
    if (filters.tenant && viewer.admin) visibleTenant(c, filters.tenant);
    const since = filters.from ? Date.parse(filters.from) : undefined;
    const until = filters.to ? Date.parse(filters.to) + 86_400_000 : undefined;
    const scanAll = !!(filters.surface || !filters.tenant || since !== undefined || until !== undefined);
    const all = await stores.ledger.list({
      tenant: filters.tenant,
      state: filters.state as LedgerState | undefined,
      kind: filters.kind as SpendKind | undefined,
      limit: scanAll ? LEDGER_SCAN : offset + limit + 1,
    });
    // A keyless token's cap entries mirror its tenant's; the tenant's own entry is the one shown.
    const matching = all.filter(
      (e) =>
        !e.tenant.startsWith("token:") &&
        (!filters.surface || ledgerSurface(e) === filters.surface) &&
        (since === undefined || e.createdAt >= since) &&
        (until === undefined || e.createdAt < until),
    );
    return { filters, matching };
  }

  pages["console.ledger"] = async (c) => {
    const viewer = c.get("viewer");
    const { filters, matching } = await ledgerRows(c);
    const entries = matching.slice(filters.offset, filters.offset + filters.limit);
    const tenants = visibleTenants(c).map((t) => t.id);
    return render(
      c,
      <LedgerPage
        viewer={viewer}
        nonce={c.get("nonce")}
        tenants={tenants}
        filters={filters}
        entries={entries}
        hasMore={matching.length > filters.offset + filters.limit}
      />,
    );
  };

  /** Every matching entry (up to the scan bound), not one page: what an export is for. */
  pages["console.ledger.csv"] = async (c) => {
    const { filters, matching } = await ledgerRows(c);
    const name = `tollgate-ledger-${filters.tenant ?? "all"}-${new Date(services.now()).toISOString().slice(0, 10)}.csv`;
    return c.body(ledgerCsv(matching), 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${name}"`,
    });
  };

  // ---- sandboxes and sessions ---------------------------------------------------------------------------------------
  pages["console.resources"] = async (c) => {
    const resources = await liveResources(
      services,
      visibleTenants(c).map((t) => t.id),
    );
    const stopped = c.req.query("stopped");
    const notice =
      stopped && /^(sandbox|session):/.test(stopped) && RESOURCE_ID.test(stopped) ? `Stopped ${stopped.replace(":", " ")}.` : undefined;
    return render(c, <ResourcesPage viewer={c.get("viewer")} nonce={c.get("nonce")} resources={resources} notice={notice} />);
  };

  pages["console.resources.stop"] = async (c) => {
    const kind: LiveKind = c.req.path.startsWith(href("/resources/sandbox/")) ? "sandbox" : "session";
    const id = param(c, "id");
    const owner = RESOURCE_ID.test(id) ? await stores.ownership.owner(kind, id) : undefined;
    if (!owner) throw new GatewayError(404, "not_found", `No ${kind} "${id}" here.`);
    visibleTenant(c, owner);
    const status = await stopResource(services, kind, id, c);
    if (status !== 200 && status !== 404 && status !== 409)
      throw new GatewayError(502, "upstream_error", `The upstream would not stop ${kind} ${id} (${status}); try again.`);
    await record(c, "resource.stop", `${kind}:${owner}/${id}`, { status });
    return c.redirect(href(`/resources?stopped=${kind}:${encodeURIComponent(id)}`), 303);
  };

  // ---- keys ---------------------------------------------------------------------------------------------------------
  async function keysPage(c: C, issued?: Parameters<typeof KeysPage>[0]["issued"], status: 200 | 201 = 200) {
    const revoked = c.req.query("revoked");
    const notice = revoked && /^[0-9a-f]{16}$/.test(revoked) ? `Revoked key ${revoked}.` : undefined;
    const tenants = visibleTenants(c);
    const used = await lastUsed(
      services,
      tenants.flatMap((t) => t.keys.map((k) => k.hash)),
    );
    return render(
      c,
      <KeysPage
        viewer={c.get("viewer")}
        nonce={c.get("nonce")}
        tenants={tenants}
        lastUsed={used}
        now={services.now()}
        notice={notice}
        issued={issued}
      />,
      status,
    );
  }

  pages["console.keys"] = (c) => keysPage(c);

  pages["console.keys.create"] = async (c) => {
    const tenant = keyTenant(c, param(c, "id"));
    const id = tenant.id;
    if (!c.get("viewer").canEdit && tenant.keys.length >= SELF_SERVICE_KEYS)
      throw new GatewayError(409, "too_many_keys", `A tenant holds at most ${SELF_SERVICE_KEYS} keys of its own making; revoke one first.`);
    const form = await formOf(c);
    const body = formValue(
      keyCreateBody,
      withoutUndefined({ label: field(form, "label").slice(0, 200), expiresAt: field(form, "expiresAt") }),
    );
    const issued = await createKey(services, asGatewayContext(c), id, body);
    // The plain key is in this one answer (not cached: see pageHeaders) and nowhere else.
    return keysPage(c, { tenant: id, id: issued.id, key: issued.key }, 201);
  };

  pages["console.keys.rotate"] = async (c) => {
    const id = keyTenant(c, param(c, "id")).id;
    const form = await formOf(c);
    const body = formValue(
      keyRotateBody,
      withoutUndefined({ graceSeconds: numberField(form, "graceSeconds"), expiresAt: field(form, "expiresAt") }),
    );
    const r = await rotateKey(services, asGatewayContext(c), id, param(c, "keyId"), body);
    return keysPage(c, { tenant: id, id: r.id, key: r.key, replaced: r.replaced, replacedExpiresAt: r.replacedExpiresAt }, 201);
  };

  pages["console.keys.revoke"] = async (c) => {
    const tenant = keyTenant(c, param(c, "id"));
    const keyId = param(c, "keyId");
    // A tenant managing itself keeps one live key (an admin is held to the fleet's last admin key instead).
    if (!c.get("viewer").canEdit) {
      const now = services.now();
      const others = tenant.keys.filter((k) => keyIdOf(k.hash) !== keyId && (!k.expiresAt || Date.parse(k.expiresAt) > now));
      if (!others.length) throw new GatewayError(409, "last_key", "This is your last live key; create another before revoking it.");
    }
    await revokeKey(services, asGatewayContext(c), tenant.id, keyId);
    return c.redirect(href(`/keys?revoked=${keyId}`), 303);
  };

  // ---- keyless tokens (a tenant's own) --------------------------------------------------------------------------
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

  pages["console.tokens"] = (c) => tokensPage(c);

  pages["console.tokens.mint"] = async (c) => {
    const tenant = tokenTenant(c);
    const form = await formOf(c);
    const target = field(form, "target");
    const minutes = numberField(form, "ttlMinutes");
    const ttlSeconds = typeof minutes === "number" ? Math.round(minutes * 60) : minutes;
    const [kind, id] = target.includes(":") ? [target.slice(0, target.indexOf(":")), target.slice(target.indexOf(":") + 1)] : [target, ""];
    const request =
      kind === "sandbox"
        ? { kind, sandboxId: id, scopes: ["runtime", "terminal", "ports"], ttlSeconds }
        : kind === "session"
          ? { kind, sessionId: id, ttlSeconds }
          : { kind: "search", cap: field(form, "cap"), ttlSeconds };
    const minted = await mintKeylessToken(services, c, tenant, formValue(mintRequest, withoutUndefined(request)));
    await record(c, "token.mint", `tenant:${tenant.id}`, { jti: minted.jti, kind: minted.kind, expiresAt: minted.expiresAt });
    return tokensPage(c, { jti: minted.jti, token: minted.token, kind: minted.kind }, 201);
  };

  pages["console.tokens.revoke"] = async (c) => {
    const tenant = tokenTenant(c);
    const jti = param(c, "jti");
    await revokeKeylessToken(services, tenant, jti);
    await record(c, "token.revoke", `tenant:${tenant.id}`, { jti });
    return c.redirect(href(`/tokens?revoked=${encodeURIComponent(jti)}`), 303);
  };

  // ---- agent grants (OAuth, src/oauth/): a tenant's own; every tenant's for an operator ---------------------------
  pages["console.grants"] = async (c) => {
    const viewer = c.get("viewer");
    const tenants = viewer.admin ? directory.list().map((t) => t.id) : [viewer.tenant];
    const grants = (await Promise.all(tenants.slice(0, 200).map((t) => tenantGrants(services, t)))).flat();
    const revoked = c.req.query("revoked");
    const notice = revoked && RESOURCE_ID.test(revoked) ? `Revoked grant ${revoked}.` : undefined;
    const canRevoke = (g: { tenant: string }) => viewer.canEdit || (viewer.role === "tenant" && g.tenant === viewer.tenant);
    return render(c, <GrantsPage viewer={viewer} nonce={c.get("nonce")} grants={grants} notice={notice} canRevoke={canRevoke} />);
  };

  pages["console.grants.revoke"] = async (c) => {
    const viewer = c.get("viewer");
    const id = param(c, "id");
    if (!viewer.canEdit && viewer.role !== "tenant") throw new GatewayError(403, "read_only", "A read-only operator cannot revoke grants.");
    await revokeTenantGrant(services, asGatewayContext(c), id, viewer.canEdit ? undefined : viewer.tenant);
    return c.redirect(href(`/grants?revoked=${encodeURIComponent(id)}`), 303);
  };

  // ---- audit and alerts -----------------------------------------------------------------------------------------------
  pages["console.audit"] = async (c) => {
    const viewer = c.get("viewer");
    const q = c.req.query();
    const before = /^\d+$/.test(q.before ?? "") ? Number(q.before) : undefined;
    const filters = {
      action: q.action?.trim().slice(0, 100) || undefined,
      actor: viewer.admin ? q.actor?.trim().slice(0, 100) || undefined : undefined,
      since: DAY.test(q.since ?? "") ? q.since : undefined,
      until: DAY.test(q.until ?? "") ? q.until : undefined,
    };
    const scanned = await stores.audit.list({ limit: AUDIT_SCAN });
    const mine = viewer.admin ? scanned : scanned.filter((e) => concernsTenant(e.target, viewer.tenant));
    const alerts = mine.filter((e) => e.action.startsWith("alert.")).slice(0, 50);
    const page = await auditPage(
      services,
      {
        action: filters.action,
        actor: filters.actor,
        target: viewer.admin ? undefined : `tenant:${viewer.tenant}`,
        since: filters.since ? Date.parse(filters.since) : undefined,
        until: filters.until ? Date.parse(filters.until) + 86_400_000 : undefined,
      },
      50,
      before,
    );
    return render(
      c,
      <AuditPage
        viewer={viewer}
        nonce={c.get("nonce")}
        tenants={visibleTenants(c)}
        thresholds={services.config.alerts.thresholds}
        globalWebhooks={services.config.alerts.webhooks}
        alerts={alerts}
        entries={page.entries.filter((e) => !e.action.startsWith("alert.") || filters.action)}
        next={page.next ?? undefined}
        filters={filters}
      />,
    );
  };

  pages["console.notFound"] = () => {
    throw new GatewayError(404, "not_found", "There is no such console page.");
  };

  const handlers: Handlers = {};
  for (const [name, page] of Object.entries(open) as [HandlerName, Page][]) handlers[name] = (c) => page(asConsoleContext(c));
  for (const [name, page] of Object.entries(pages) as [HandlerName, Page][])
    handlers[name] = async (gc) => {
      const c = asConsoleContext(gc);
      return (await consoleSession(c)) ?? page(c);
    };
  return handlers;
}
