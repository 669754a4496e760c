/** @jsxImportSource hono/jsx */
// The operator console at /_tollgate/console: server-rendered pages over the same state the admin API reads. An admin
// key sees every tenant; a tenant key sees only itself (another tenant's pages and resources are 404). Sign-in swaps
// the key for a session cookie; every form carries the session's token and must come from the console's own origin.
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import type { Child } from "hono/jsx";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { hashTenantKey, keyIdOf, type Tenant } from "../tenants.js";
import { isStateUnavailable } from "../state/errors.js";
import { SPEND_KINDS, type LedgerState, type SpendKind } from "../state/types.js";
import { publicOriginOf } from "../public-origin.js";
import { changeTenant } from "../operators/tenant-changes.js";
import { issueKey } from "../routes/admin/keys.js";
import { ledgerSurface } from "../routes/admin/views.js";
import { currentSession, endSession, startSession, validFormToken, type ConsoleSession } from "./session.js";
import { liveResources, stopResource, type LiveKind } from "./resources.js";
import { tenantSpend } from "./spend.js";
import { fleetSavings } from "../operators/savings.js";
import { ErrorPage, href, type Viewer } from "./pages/layout.js";
import { OverviewPage } from "./pages/overview.js";
import { TenantPage } from "./pages/tenant.js";
import { AuditPage } from "./pages/audit.js";
import { KeysPage, LedgerPage, LoginPage, ResourcesPage, type LedgerFilters } from "./pages/lists.js";

type ConsoleEnv = { Variables: { nonce: string; session: ConsoleSession; viewer: Viewer } };
type C = Context<ConsoleEnv>;
/** The admin changes (../operators/tenant-changes.ts) read the acting tenant and request id, which a console context has. */
const asGatewayContext = (c: C) => c as unknown as Context<GatewayEnv>;

const STATES: LedgerState[] = ["reserved", "committed", "released", "uncertain"];
const SURFACES = ["search", "fetch", "session", "sandbox", "other"];
const LEDGER_SCAN = 10_000;
const AUDIT_SCAN = 500;
const RESOURCE_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

const pick = <T extends string>(value: string | undefined, allowed: readonly T[]): T | undefined =>
  allowed.includes(value as T) ? (value as T) : undefined;

/** The posted form's fields; a body that is no form is a 400 page, not a crash. */
async function formOf(c: C): Promise<Record<string, unknown>> {
  try {
    return await c.req.parseBody();
  } catch {
    throw new GatewayError(400, "invalid_form", "This form could not be read; reload the page and try again.");
  }
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

export function consoleRoutes(services: GatewayServices): Hono<ConsoleEnv> {
  const { stores, directory } = services;
  const app = new Hono<ConsoleEnv>();

  app.onError((err, c) => {
    let status = 503;
    let message = "The console could not complete this request; try again shortly.";
    if (err instanceof GatewayError) [status, message] = [err.status, err.message];
    else if (err instanceof HTTPException)
      [status, message] = [err.status, err.status === 403 ? "This form was not sent from the console's own page." : err.message];
    else if (isStateUnavailable(err)) message = "The gateway's shared state store is unreachable; try again shortly.";
    else services.logger.error("console error", { requestId: c.get("requestId"), error: String((err as Error)?.stack ?? err) });
    const code = ([400, 401, 403, 404, 409, 502, 503] as const).find((s) => s === status) ?? 503;
    return render(c, <ErrorPage status={code} message={message} viewer={c.get("viewer")} nonce={c.get("nonce") ?? ""} />, code);
  });

  app.use("*", pageHeaders);
  // Forms must come from this origin (the request's own, or the configured public one behind a proxy).
  app.use("*", csrf({ origin: (origin, c) => origin === new URL(c.req.url).origin || origin === publicOriginOf(c, services) }));

  // ---- sign-in --------------------------------------------------------------------------------------------------
  app.get("/login", async (c) => {
    if (await signedIn(c)) return c.redirect(href(""), 303);
    return render(c, <LoginPage nonce={c.get("nonce")} />);
  });

  app.post("/login", async (c) => {
    const form = await formOf(c);
    const key = typeof form.key === "string" ? form.key.trim() : "";
    let tenant: Tenant;
    try {
      tenant = await directory.authenticate(key);
    } catch (err) {
      const message = err instanceof GatewayError && err.status === 401 ? err.message : "That key cannot sign in.";
      return render(c, <LoginPage nonce={c.get("nonce")} message={message} />, 401);
    }
    await startSession(services, c, tenant.id, await hashTenantKey(key));
    return c.redirect(href(""), 303);
  });

  /** The live session's viewer, or undefined: the tenant must still exist, be enabled and hold the key signed in with. */
  async function signedIn(c: C): Promise<{ session: ConsoleSession; tenant: Tenant } | undefined> {
    const session = await currentSession(services, c);
    if (!session) return undefined;
    const tenant = directory.get(session.tenant);
    const now = services.now();
    const keyLive = tenant?.keys.some((k) => k.hash === session.keyHash && (!k.expiresAt || Date.parse(k.expiresAt) > now));
    if (!tenant?.enabled || !keyLive) {
      await endSession(services, c, session);
      return undefined;
    }
    return { session, tenant };
  }

  // ---- everything else needs a session (and, for a form, its token) ------------------------------------------------
  app.use("*", async function consoleSession(c, next) {
    const found = await signedIn(c);
    if (!found) {
      if (c.req.method === "GET" || c.req.method === "HEAD") return c.redirect(href("/login"), 303);
      throw new GatewayError(401, "unauthorized", "Your console session has ended; sign in again.");
    }
    const { session, tenant } = found;
    c.set("session", session);
    c.set("tenant", tenant); // the admin actions below are audited under this tenant
    c.set("viewer", { tenant: tenant.id, admin: tenant.scopes.includes("admin"), csrf: session.csrf });
    if (c.req.method === "POST") {
      const form = await formOf(c);
      if (!validFormToken(session, form._csrf))
        throw new GatewayError(403, "csrf_token", "This form's token is missing or stale; reload the page and try again.");
    }
    await next();
  });

  app.post("/logout", async (c) => {
    await endSession(services, c, c.get("session"));
    return c.redirect(href("/login"), 303);
  });

  const visibleTenants = (c: C): Tenant[] => {
    const v = c.get("viewer");
    return v.admin ? directory.list().sort((a, b) => a.id.localeCompare(b.id)) : [c.get("tenant")!];
  };
  /** A tenant the viewer may see, or 404 (a tenant key cannot tell another tenant's resources exist). */
  const visibleTenant = (c: C, id: string): Tenant => {
    const v = c.get("viewer");
    const t = v.admin || id === v.tenant ? directory.get(id) : undefined;
    if (!t) throw new GatewayError(404, "not_found", `No tenant "${id}" here.`);
    return t;
  };
  const requireAdmin = (c: C) => {
    if (!c.get("viewer").admin) throw new GatewayError(403, "missing_scope", "Only an admin key can do this.");
  };

  // ---- pages -------------------------------------------------------------------------------------------------------
  app.get("/", async (c) => {
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
    const savings = await fleetSavings(
      services,
      tenants.map((t) => t.id),
    );
    return render(c, <OverviewPage viewer={viewer} nonce={c.get("nonce")} spends={spends} savings={savings} live={live} />);
  });

  app.get("/tenants/:id", async (c) => {
    const tenant = visibleTenant(c, c.req.param("id"));
    const [spend, resources, ledger, audit, savings] = await Promise.all([
      tenantSpend(services, tenant),
      liveResources(services, [tenant.id]),
      stores.ledger.list({ tenant: tenant.id, limit: 10 }),
      stores.audit.list({ limit: AUDIT_SCAN }),
      fleetSavings(services, [tenant.id]),
    ]);
    const own = audit.filter((e) => concernsTenant(e.target, tenant.id)).slice(0, 20);
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
      />,
    );
  });

  app.get("/ledger", async (c) => {
    const viewer = c.get("viewer");
    const q = c.req.query();
    const limit = Math.min(1000, Math.max(1, Math.floor(Number(q.limit)) || 100));
    const filters: LedgerFilters = {
      tenant: viewer.admin ? q.tenant || undefined : viewer.tenant,
      state: pick(q.state, STATES),
      kind: pick(q.kind, SPEND_KINDS as readonly SpendKind[]),
      surface: pick(q.surface, SURFACES),
      limit,
    };
    if (filters.tenant && viewer.admin) visibleTenant(c, filters.tenant);
    const all = await stores.ledger.list({
      tenant: filters.tenant,
      state: filters.state as LedgerState | undefined,
      kind: filters.kind as SpendKind | undefined,
      limit: filters.surface || !filters.tenant ? LEDGER_SCAN : limit,
    });
    // A keyless token's cap entries mirror its tenant's; the tenant's own entry is the one shown.
    const entries = all
      .filter((e) => !e.tenant.startsWith("token:") && (!filters.surface || ledgerSurface(e) === filters.surface))
      .slice(0, limit);
    const tenants = visibleTenants(c).map((t) => t.id);
    return render(c, <LedgerPage viewer={viewer} nonce={c.get("nonce")} tenants={tenants} filters={filters} entries={entries} />);
  });

  app.get("/resources", async (c) => {
    const resources = await liveResources(
      services,
      visibleTenants(c).map((t) => t.id),
    );
    const stopped = c.req.query("stopped");
    const notice =
      stopped && /^(sandbox|session):/.test(stopped) && RESOURCE_ID.test(stopped) ? `Stopped ${stopped.replace(":", " ")}.` : undefined;
    return render(c, <ResourcesPage viewer={c.get("viewer")} nonce={c.get("nonce")} resources={resources} notice={notice} />);
  });

  app.post("/resources/:kind{sandbox|session}/:id/stop", async (c) => {
    const kind = c.req.param("kind") as LiveKind;
    const id = c.req.param("id");
    const owner = RESOURCE_ID.test(id) ? await stores.ownership.owner(kind, id) : undefined;
    if (!owner) throw new GatewayError(404, "not_found", `No ${kind} "${id}" here.`);
    visibleTenant(c, owner);
    const status = await stopResource(services, kind, id, c);
    if (status !== 200 && status !== 404 && status !== 409)
      throw new GatewayError(502, "upstream_error", `The upstream would not stop ${kind} ${id} (${status}); try again.`);
    services.logger.info("console stop", {
      requestId: c.get("requestId"),
      tenant: owner,
      actor: c.get("viewer").tenant,
      kind,
      id: id,
      status,
    });
    return c.redirect(href(`/resources?stopped=${kind}:${encodeURIComponent(id)}`), 303);
  });

  app.get("/keys", async (c) => {
    const revoked = c.req.query("revoked");
    const notice = revoked && /^[0-9a-f]{16}$/.test(revoked) ? `Revoked key ${revoked}.` : undefined;
    return render(c, <KeysPage viewer={c.get("viewer")} nonce={c.get("nonce")} tenants={visibleTenants(c)} notice={notice} />);
  });

  app.post("/tenants/:id/keys", async (c) => {
    requireAdmin(c);
    const id = visibleTenant(c, c.req.param("id")).id;
    const form = await formOf(c);
    const label = typeof form.label === "string" ? form.label.trim().slice(0, 200) : "";
    const issued = await issueKey(label || undefined);
    const keyId = keyIdOf(issued.entry.hash);
    await changeTenant(services, asGatewayContext(c), id, { action: "key.create", target: `key:${id}/${keyId}` }, (t) => ({
      ...t,
      keys: [...t.keys, issued.entry],
    }));
    const { key } = issued.view(id);
    // The plain key is in this one answer (not cached: see pageHeaders) and nowhere else.
    return render(
      c,
      <KeysPage viewer={c.get("viewer")} nonce={c.get("nonce")} tenants={visibleTenants(c)} issued={{ tenant: id, id: keyId, key }} />,
      201,
    );
  });

  app.post("/tenants/:id/keys/:keyId/revoke", async (c) => {
    requireAdmin(c);
    const id = visibleTenant(c, c.req.param("id")).id;
    const keyId = c.req.param("keyId");
    await changeTenant(services, asGatewayContext(c), id, { action: "key.revoke", target: `key:${id}/${keyId}` }, (t) => {
      const old = t.keys.find((k) => keyIdOf(k.hash) === keyId);
      if (!old) throw new GatewayError(404, "key_not_found", `Tenant "${id}" has no key "${keyId}".`);
      return { ...t, keys: t.keys.filter((k) => k !== old) };
    });
    return c.redirect(href(`/keys?revoked=${keyId}`), 303);
  });

  app.get("/audit", async (c) => {
    const viewer = c.get("viewer");
    const before = /^\d+$/.test(c.req.query("before") ?? "") ? Number(c.req.query("before")) : undefined;
    const scanned = await stores.audit.list({ limit: AUDIT_SCAN });
    const mine = viewer.admin ? scanned : scanned.filter((e) => concernsTenant(e.target, viewer.tenant));
    const alerts = mine.filter((e) => e.action.startsWith("alert.")).slice(0, 50);
    let entries = viewer.admin ? await stores.audit.list({ limit: 50, before }) : mine.slice(0, 100);
    let next: number | undefined;
    if (viewer.admin && entries.length === 50) next = entries[entries.length - 1]!.seq;
    entries = entries.filter((e) => !e.action.startsWith("alert."));
    return render(
      c,
      <AuditPage
        viewer={viewer}
        nonce={c.get("nonce")}
        tenants={visibleTenants(c)}
        thresholds={services.config.alerts.thresholds}
        globalWebhooks={services.config.alerts.webhooks}
        alerts={alerts}
        entries={entries}
        next={next}
      />,
    );
  });

  app.all("*", () => {
    throw new GatewayError(404, "not_found", "There is no such console page.");
  });
  return app;
}

/** Whether an audit target is about the tenant: "tenant:<id>" or one of its keys "key:<id>/<keyId>". */
function concernsTenant(target: string, tenant: string): boolean {
  return target === `tenant:${tenant}` || target.startsWith(`key:${tenant}/`);
}
