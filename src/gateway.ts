// createGateway(config, deps): the runtime-agnostic Hono app. The whole request path, in the order it runs:
//
//   normalise the path (refuse what could be read two ways) → request-id → tenant store check (when due, beside the
//     request) → access-log → valid Host (400)
//     → client address → public hosts (421) → CORS
//     → exposed ports (by Host: <port>-<id>.<gateway host>)      gateway token or browser cookie → upstream port
//     → the route table (src/routing/table.ts): the gateway's own rows (src/routing/own-rows.ts: /_tollgate health,
//       ready, metrics, usage, ledger, tokens, admin API, docs, console; /mcp) and the upstream's, every row mounted
//       by middleware/chain.ts: identify (the one caller resolver: keys, tokens, tickets, the metrics bearer, the
//       console's session) → scope → rate limit (once per request) → owner → body → quota → meter → handler
//     → anything else: 404 route_not_fronted
import { Hono, type Context } from "hono";
import type { TollgateConfig } from "../config/schema.js";
import type { GatewayEnv } from "./context.js";
import { errorResponse, GatewayError } from "./errors.js";
import { Logger, Redactor, stdoutSink } from "./log.js";
import { TenantDirectory } from "./identity/tenants.js";
import { identifyKey } from "../middleware/identify/index.js";
import { metricsTokenCheck } from "./identity/caller.js";
import { fetchTransport } from "./web/transport.js";
import { Upstream, pathAndQuery } from "./upstream/upstream.js";
import { requestId } from "../middleware/request-id/index.js";
import { accessLog } from "../middleware/access-log/index.js";
import { validHost } from "../middleware/valid-host/index.js";
import { gatewayCors } from "../middleware/cors/index.js";
import { publicHostsOnly } from "../middleware/public-host/index.js";
import { ownHandlers } from "./operators/http/own-routes.js";
import { fetchWebSocketRelay } from "./web/websocket.js";
import { webPlatform } from "./web/speed.js";
import { memoryStores } from "./state/memory.js";
import { TokenService } from "./identity/tokens.js";
import type { GatewayServices } from "./services.js";
import { isStateUnavailable } from "./state/errors.js";
import { exposedPorts } from "./sandboxes/ports.js";
import { portHosts } from "../middleware/exposed-ports/index.js";
import { runtimeHandlers } from "./sandboxes/runtime.js";
import { sandboxHandlers } from "./sandboxes/routes.js";
import { usageHandlers } from "./operators/http/usage-routes.js";
import { cdpHandlers } from "./sessions/cdp.js";
import { liveHandlers } from "./sessions/live.js";
import { sessionHandlers } from "./sessions/routes.js";
import { tokenHandlers } from "./operators/http/token-routes.js";
import { paidSearchHandlers } from "./search/routes.js";
import { x402SessionHandlers } from "./search/x402-session.js";
import { PaymentReconciler, paymentsMemory, tenantAmounts } from "./payments/index.js";
import { normalisingFetch } from "../middleware/normalize/index.js";
import { splitRequestUrl } from "./web/request-url.js";
import { mountRouteTable, routeNotFronted } from "../middleware/chain.js";
import { series } from "../middleware/series/index.js";
import { commonHandlers, type Handlers } from "./routing/handlers.js";
import { OAUTH_CORS_PATHS, oauthHandlers, oauthPreflight } from "./oauth/server.js";
import { grantHandlers } from "./oauth/grants.js";
import { volumeHandlers } from "./sandboxes/volume-names.js";
import { nestedHandlers } from "./jobs/nested.js";
import { GatewayMetrics } from "./telemetry/gateway-metrics.js";
import { withMeteredLedger } from "./telemetry/metered-ledger.js";
import { OWNER_MEMORY_MS, withRememberedOwners } from "./state/remembered-owners.js";
import { clientAddressOf, trustedProxyMatcher } from "./web/forwarded.js";
import { RememberingRouter } from "./web/remembering-router.js";
import { metricsHandlers } from "./operators/http/metrics-route.js";
import { readyHandlers } from "./operators/http/ready-route.js";
import { Readiness } from "./operators/actions/readiness.js";
import { pollTenantStore, TenantSync } from "./identity/tenant-sync.js";
import { operatorHandlers } from "./operators/http/admin/index.js";
import { consolePages } from "./console/routes.js";
import { ROUTES, type RouteRow } from "./routing/table.js";
import { keyUseRecorder } from "./identity/key-usage.js";
import { BackgroundWork } from "./web/background.js";
import { moneyListener } from "./operators/alerts/money-listener.js";
import { AlertMonitor } from "./operators/alerts/alert-monitor.js";
import { WebhookDispatcher } from "./operators/alerts/webhooks.js";
import { SavingsCounter } from "./operators/actions/savings.js";
import { RuntimeCustody } from "./sandboxes/custody.js";
import { publicHostsWritten } from "./sandboxes/port-hosts.js";
import { docsHandlers } from "./operators/http/docs.js";
import { traceRequests } from "../middleware/trace/index.js";
import { RequestRecorder } from "./telemetry/request-recorder.js";
import { webDestinationGuard } from "./web/destination-guard.js";
import { mcpHandlers } from "./mcp/endpoint.js";
import { accessSignIn, oidcSignIn } from "./identity/sign-in.js";
import { mountSales, salesHandlers } from "./sales/index.js";
import { TenantSecrets } from "./identity/tenant-secrets.js";
import { secretHandlers } from "./operators/http/secret-routes.js";
import { egressHandlers } from "./sandboxes/egress.js";

import {
  accountWallets,
  executionContextOf,
  paymentSignerOf,
  randomSecret,
  subrequestEnv,
  upstreamAccounts,
  type Gateway,
  type GatewayDeps,
  type RotatableSecrets,
} from "./gateway-deps.js";

export type { Gateway, GatewayDeps, RotatableSecrets } from "./gateway-deps.js";

export function createGateway(config: TollgateConfig, deps: GatewayDeps): Gateway {
  const now = deps.now ?? Date.now;
  const redactor = new Redactor().add(
    deps.secrets.upstreamApiKey,
    deps.secrets.walletKey,
    deps.secrets.tokenSecret,
    deps.secrets.metricsToken,
    deps.secrets.webhookSecret,
    deps.secrets.pkcs11Pin,
    ...(deps.secrets.tokenSecrets ?? []).map((t) => t.secret),
    ...(deps.secrets.secretKeys ?? []).map((t) => t.secret),
    deps.secrets.oidcClientSecret,
    ...Object.values(deps.secrets.accountApiKeys ?? {}),
    ...Object.values(deps.secrets.accountWalletKeys ?? {}),
  );
  const logger = new Logger(deps.logSink ?? stdoutSink, config.server.logLevel, redactor, now);
  // The configuration's money parsed once, now, into the gateway's money memory (services.payments); a tenant synced or
  // changed later: the first time its money is counted.
  const payments = paymentsMemory(config);
  for (const t of config.tenants) tenantAmounts(t);
  const directory = new TenantDirectory(config.tenants, now);
  const metrics = deps.metrics ?? new GatewayMetrics();
  metrics.classifyRows(ROUTES); // each row's class in the latency histograms is its `metric` field
  const endedRetentionMs = config.state.endedRetentionDays * 86_400_000;
  // Owners are remembered per instance (an owner never changes once written): a control read's owner check costs no
  // state round trip once this instance has seen the resource (src/state/remembered-owners.ts).
  const stores = withRememberedOwners(withMeteredLedger(deps.stores ?? memoryStores(now, { endedRetentionMs }), metrics), {
    now,
    ttlMs: Math.min(OWNER_MEMORY_MS, endedRetentionMs),
  });
  const accounts = upstreamAccounts(config, deps, stores, metrics, now); // [the accounts' API keys' one holder]
  const upstream = new Upstream(config.upstream, deps.transport ?? fetchTransport, deps.secrets.upstreamApiKey, metrics, accounts);
  const sharedWaits = deps.sharedWaits ?? true;
  const tenantSync = new TenantSync(stores.tenants, directory, config.tenants, logger, now, { sharedWaits });
  directory.setRefresher(tenantSync.fresh.bind(tenantSync));
  const tokenSecrets = deps.secrets.tokenSecrets ?? deps.secrets.tokenSecret;
  // What rotateSecrets compares a re-read with (the holders keep their own copies; this one only tells what changed).
  let held: RotatableSecrets = {
    upstreamApiKey: deps.secrets.upstreamApiKey,
    tokenSecrets:
      deps.secrets.tokenSecrets ?? (deps.secrets.tokenSecret ? [{ kid: "default", secret: deps.secrets.tokenSecret }] : undefined),
    webhookSecret: deps.secrets.webhookSecret,
    metricsToken: deps.secrets.metricsToken,
  };
  if (!tokenSecrets) logger.info("token secret not set (TOLLGATE_TOKEN_SECRET); minted tokens will not survive a restart");
  const tokens = new TokenService(tokenSecrets ?? randomSecret(), stores.kv, now, (kind) => metrics.tokenMinted(kind));
  const closers: Array<() => Promise<void> | void> = [() => stores.close()];
  if (deps.tracer) {
    upstream.tracer = deps.tracer;
    closers.push(() => deps.tracer!.flush());
  }
  const background = new BackgroundWork(logger, deps.executionContexts ?? true);
  accounts.beside = (c, work, what) => background.run(c as Context | undefined, work, what);
  let metricsCheck = metricsTokenCheck(deps.secrets.metricsToken);
  // [the tenant secrets' sealing keys' one holder]: TOLLGATE_SECRET_KEYS, else the token secrets, else this process's own.
  const sealKeys = deps.secrets.secretKeys ?? held.tokenSecrets ?? [{ kid: "process", secret: randomSecret() }];
  const core: Omit<GatewayServices, "custody" | "webhooks" | "savings"> = {
    config,
    logger,
    directory,
    tenantSync,
    upstream,
    stores,
    tokens,
    webSocketRelay: deps.webSocketRelay ?? fetchWebSocketRelay,
    platform: deps.platform ?? webPlatform,
    payments, // [what the gateway remembers: built here, hung on its services, never in a module]
    publicHosts: publicHostsWritten(),
    trustedProxy: trustedProxyMatcher(config.server.trustedProxies),
    peerAddress: deps.peerAddress, // the runtime entry says who the peer is (node.ts, worker.ts); none known without one
    metrics,
    webhookSender: deps.webhookSender,
    destinations: deps.destinations ?? webDestinationGuard,
    tracer: deps.tracer,
    now,
    instanceId: deps.instanceId ?? crypto.randomUUID(),
    sharedWaits,
    background: background.run.bind(background),
    onClose: (fn) => closers.push(fn),
    // [the metrics token's one holder]; read through, so a rotated token (rotateSecrets) applies to mounted rows too
    isMetricsToken: (bearer) => metricsCheck?.(bearer) ?? false,
    vault: new TenantSecrets(stores, sealKeys, now),
    signIn: {
      oidc: config.operators.oidc ? oidcSignIn(config.operators.oidc, deps.secrets.oidcClientSecret) : undefined, // [the OIDC client secret's one holder]
      access: config.operators.access ? accessSignIn(config.operators.access, config.operators.oidc) : undefined,
    },
  };
  // The parts that hold the services themselves, built on them: the same object, whole once they are set.
  const services = core as GatewayServices;
  services.custody = new RuntimeCustody(services);
  services.webhooks = new WebhookDispatcher(services, deps.secrets.webhookSecret); // [the webhook secret's one holder]
  services.savings = new SavingsCounter(services);
  // [the tenants' request log: each request's record written beside it, in batches, never before its upstream call]
  services.requests = new RequestRecorder({ log: stores.requests, keep: config.requestLog.keep, background: services.background, now });
  closers.push(() => services.requests?.flush().catch((err) => logger.error("request log not written at close", { error: String(err) })));
  services.moneyEvents = moneyListener(services); // [payments announce budget and credit events; operators act on them]
  const signer = paymentSignerOf(config, deps); // [the wallet key's one holder, or the signer that holds it elsewhere]
  services.wallets = accountWallets(config, deps, signer); // [each account wallet's key: its own signer]
  const wallet = deps.walletSigner;
  if (wallet?.close) closers.push(() => wallet.close!());
  for (const w of Object.values(deps.accountWalletSigners ?? {})) if (w.close) closers.push(() => w.close!());
  directory.setUseListener(keyUseRecorder(services)); // [a key's "last used", written at most once a minute]

  // One router for the app and the console's rows (app.route copies them in); see src/web/remembering-router.ts.
  const app = new Hono<GatewayEnv>({ router: new RememberingRouter() });
  const knownTenant = (c: Context<GatewayEnv>): string | undefined => {
    const key = c.req.header("x-api-key") ?? c.req.header("authorization")?.replace(/^Bearer\s+/i, "");
    try {
      return key ? directory.authenticateNow(key)?.id : undefined;
    } catch {
      return undefined;
    }
  };
  app.onError((err, c) => {
    const f = c.get("logFields");
    if (f) {
      f.code = err instanceof GatewayError ? err.code : isStateUnavailable(err) ? "state_unavailable" : "internal_error";
      // A refusal before the caller was admitted (a key without the row's scope): the request log files it under the
      // key's tenant when that key was checked lately (no wait).
      f.tenant ??= knownTenant(c);
    }
    if (err instanceof GatewayError) metrics.refusal(err.code);
    if (isStateUnavailable(err) || (err instanceof GatewayError && err.code === "state_unavailable")) metrics.stateError();
    if (isStateUnavailable(err))
      logger.error("state store unavailable", { requestId: c.get("requestId"), error: String((err as Error).message) });
    else if (!(err instanceof GatewayError))
      logger.error("unhandled", { requestId: c.get("requestId"), error: String((err as Error)?.stack ?? err) });
    return errorResponse(err, c.get("requestId"));
  });
  app.notFound((c) => {
    const { path } = splitRequestUrl(c.req.url);
    // An operator may open a passthrough for admins (off by default): everything else is refused, never forwarded.
    if (config.server.adminPassthrough && path.startsWith("/api/")) return adminPassthrough(c);
    metrics.refusal("route_not_fronted");
    const f = c.get("logFields");
    if (f) {
      f.code = "route_not_fronted";
      // The request log records it for the tenant whose key it carries, when that key was seen lately (no wait).
      f.tenant ??= knownTenant(c);
    }
    return errorResponse(routeNotFronted(c.req.method, path), c.get("requestId"));
  });
  const adminPassthrough = async (c: Context<GatewayEnv>) => {
    try {
      await identifyKey(services, c, "admin");
      const res = await upstream.call(c, { method: c.req.method, path: pathAndQuery(c), headers: c.req.raw.headers, body: c.req.raw.body });
      logger.info("admin passthrough", { requestId: c.get("requestId"), tenant: c.get("tenant")?.id, method: c.req.method });
      return Upstream.relay(res);
    } catch (err) {
      return errorResponse(err, c.get("requestId"));
    }
  };

  // Steps that do nothing after next() share one step of Hono's chain with the one after them (middleware/series).
  app.use(requestId(services.platform));
  app.use(
    series([
      // Each request starts the tenant store check when one is due, beside itself: no timer, and no request waits for it.
      pollTenantStore(tenantSync, services.background),
      accessLog(logger, { metrics, clientAddress: clientAddressOf(services), requests: services.requests, clock: now }),
    ]),
  );
  if (deps.tracer) app.use(traceRequests(deps.tracer, services.background)); // [mount: the request's span, from its traceparent; its trace id in the log line]
  const hostSteps = [
    validHost(), // [mount: a Host that makes no URL is a 400 here, not a 500 later]
    publicHostsOnly(services), // [mount: with server.publicHosts, no other Host gets further]
  ];
  const ports = portHosts(exposedPorts(services), config.server.trustedProxies.length > 0); // [mount: only a port-shaped Host reaches the sandbox port relay]
  if (config.server.cors.origins.length) {
    // [mount: CORS preflights, before any credential check]; CORS adds its headers after next(), so its series ends there.
    app.use(series([...hostSteps, gatewayCors(config.server.cors)]));
    app.use(ports);
  } else app.use(series([...hostSteps, ports]));
  // The console's rows, on a sub-app that answers with the console's own pages (its errors, headers, origin check).
  const isPage = (r: RouteRow) => r.auth.includes("console");
  const [pageRows, tableRows] = [ROUTES.filter(isPage), ROUTES.filter((r) => !isPage(r))];
  const mountPages = (pages: Hono<GatewayEnv>, handlers: Handlers) => mountRouteTable(pages, services, handlers, pageRows);
  app.route("/", consolePages(services, mountPages)); // [mount: the operator console's rows, its own pages]
  const common = commonHandlers(services);
  const rowHandlers: Handlers = {
    // The gateway's own rows (src/routing/own-rows.ts)
    ...ownHandlers,
    ...operatorHandlers(services), // admin API and /openapi.json
    ...docsHandlers(deps.docsAssets), // /docs: the OpenAPI document as a page
    ...readyHandlers(new Readiness(services, signer, { accountWallets: services.wallets.addresses() }), services),
    ...metricsHandlers(services, metrics),
    ...tokenHandlers(services),
    ...usageHandlers(services),
    ...mcpHandlers(services, !!signer || services.wallets.any), // /mcp: each tool a request through the route table
    ...oauthHandlers(services), // the OAuth authorization server for /mcp (src/oauth/)
    ...grantHandlers(services), // its grants, per tenant and for operators
    ...salesHandlers(services), // what wallet buyers paid ([sales]): GET /_tollgate/admin/sales
    ...secretHandlers(services), // tenant secrets, per tenant and for operators
    // The upstream's rows
    ...common,
    ...volumeHandlers(services, common),
    ...nestedHandlers(services),
    ...paidSearchHandlers(services),
    ...x402SessionHandlers(services),
    ...sessionHandlers(services),
    ...cdpHandlers(services),
    ...liveHandlers(services),
    ...sandboxHandlers(services),
    ...runtimeHandlers(services),
    ...egressHandlers(services), // $TOLLGATE_EGRESS/NAME/<path>: a secret's placeholder swapped for its value
  };
  // CORS preflights of the OAuth endpoints (browser-based MCP clients): any origin, no credentials.
  for (const path of OAUTH_CORS_PATHS) app.options(path, () => oauthPreflight());
  // [mount: sold rows (with [sales]) answer a wallet with 402, then run its paid call as its wallet tenant: src/sales]
  const salesSecret = typeof tokenSecrets === "string" ? tokenSecrets : (tokenSecrets?.[0]?.secret ?? randomSecret());
  services.sales = mountSales(app, services, { walletAddress: signer?.address, secret: salesSecret });
  mountRouteTable(app, services, rowHandlers, tableRows);

  // Paths are normalised before any route sees them, the way the upstream will read them (middleware/normalize/index.ts).
  const dispatch = app.fetch;
  services.dispatch = async (req, c) => app.fetch(req, subrequestEnv(c.env), executionContextOf(c));
  app.fetch = normalisingFetch(dispatch);

  return {
    app,
    services,
    logger,
    upstream,
    directory,
    stores,
    reconciler: new PaymentReconciler(services),
    alerts: new AlertMonitor(services, deps.alertSources, signer),
    rotateSecrets(next, tokenGraceMs) {
      const changed: string[] = [];
      if (next.upstreamApiKey && next.upstreamApiKey !== held.upstreamApiKey) {
        redactor.add(next.upstreamApiKey);
        upstream.setApiKey(next.upstreamApiKey);
        changed.push("upstreamApiKey");
      }
      const tokenList = next.tokenSecrets;
      if (tokenList?.length && JSON.stringify(tokenList) !== JSON.stringify(held.tokenSecrets)) {
        redactor.add(...tokenList.map((t) => t.secret));
        tokens.replaceSecrets(tokenList, tokenGraceMs);
        changed.push("tokenSecrets");
      }
      if (next.webhookSecret && next.webhookSecret !== held.webhookSecret) {
        redactor.add(next.webhookSecret);
        services.webhooks.setSecret(next.webhookSecret);
        changed.push("webhookSecret");
      }
      if (next.metricsToken && next.metricsToken !== held.metricsToken) {
        redactor.add(next.metricsToken);
        metricsCheck = metricsTokenCheck(next.metricsToken);
        changed.push("metricsToken");
      }
      held = { ...held, ...Object.fromEntries(changed.map((k) => [k, next[k as keyof RotatableSecrets]])) };
      // Each account's key to its one holder (the accounts), from the next call it makes: `accountApiKey:<id>`.
      for (const [id, key] of Object.entries(next.accountApiKeys ?? {})) {
        if (!key || accounts.apiKey(id) === key || !accounts.get(id)) continue;
        redactor.add(key);
        if (accounts.setApiKey(id, key)) {
          changed.push(`accountApiKey:${id}`);
          upstream.credentials.rotated();
        }
      }
      return changed;
    },
    async close(backgroundMs = 2_000) {
      const left = await background.settled(backgroundMs);
      if (left > 0) logger.error("closing with background work unfinished", { pending: left, waitedMs: backgroundMs });
      for (const fn of closers.reverse()) await fn();
    },
  };
}
