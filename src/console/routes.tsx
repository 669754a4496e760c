/** @jsxImportSource hono/jsx */
// The operator console at /_tollgate/console: server-rendered pages over the same state the admin API reads, and
// changes made through the admin API's own schemas and actions (src/operators/actions/). Roles: an admin key sees and
// changes every tenant; an operator-readonly key sees every tenant and changes nothing; a tenant key sees only itself
// (another tenant's pages and resources are 404) and manages its own keys and keyless tokens. Sign-in swaps a key, or a
// one-time link from `tollgate console link`, for a session cookie; every form carries the session's token and must
// come from the console's own origin; every change is in the audit log. The pages are one row of the route table
// (`console.pages`, src/routing/own-rows.ts): the chain's identify step reads the session cookie, and the row's handler
// runs these pages with that caller (their own error pages, CSRF check and page headers included). This module builds
// that sub-app; the pages themselves are one file per family in ./handlers/ (sign-in in ./sign-in.tsx), each calling
// the same operator actions as the admin API (src/operators/actions/).
import { Hono, type MiddlewareHandler } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { isStateUnavailable } from "../state/errors.js";
import { publicOriginOf } from "../web/public-origin.js";
import type { Handlers } from "../routing/handlers.js";
import type { HandlerName } from "../routing/handler-names.js";
import { CONSOLE_PATH } from "../identity/console-session.js";
import { ErrorPage } from "./pages/layout.js";
import { asConsoleContext, type ConsoleEnv, type Page, type Pages, render } from "./kit.js";
import { requireSession, signInPages, signOutPages } from "./sign-in.js";
import { overviewPages } from "./handlers/overview.js";
import { tenantPages } from "./handlers/tenants.js";
import { ledgerPages } from "./handlers/ledger.js";
import { resourcePages } from "./handlers/resources.js";
import { keyPages } from "./handlers/keys.js";
import { tokenPages } from "./handlers/tokens.js";
import { secretPages } from "./handlers/secrets.js";
import { grantPages } from "./handlers/grants.js";
import { auditPages } from "./handlers/audit.js";
import { requestPages } from "./handlers/requests.js";
import { driftPages } from "./handlers/drift.js";
import { salesPages } from "./handlers/sales.js";

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

/** Every console page's handler by name, one file per page family (./handlers/): sign-in open, the rest behind a session. */
function consoleHandlers(services: GatewayServices): Handlers {
  const open = signInPages(services);
  const pages: Pages = {
    ...signOutPages(services),
    ...overviewPages(services),
    ...tenantPages(services),
    ...ledgerPages(services),
    ...resourcePages(services),
    ...keyPages(services),
    ...tokenPages(services),
    ...secretPages(services),
    ...grantPages(services),
    ...auditPages(services),
    ...requestPages(services),
    ...driftPages(services), // config drift (operators)
    ...salesPages(services), // what wallet buyers paid, per buyer (operators, with [sales])
    "console.notFound": () => {
      throw new GatewayError(404, "not_found", "There is no such console page.");
    },
  };
  const handlers: Handlers = {};
  for (const [name, page] of Object.entries(open) as [HandlerName, Page][]) handlers[name] = (c) => page(asConsoleContext(c));
  for (const [name, page] of Object.entries(pages) as [HandlerName, Page][])
    handlers[name] = async (gc) => {
      const c = asConsoleContext(gc);
      return (await requireSession(services, c)) ?? page(c);
    };
  return handlers;
}
