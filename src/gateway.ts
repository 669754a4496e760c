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
import { Hono, type Context, type ExecutionContext } from "hono";
import type { TollgateConfig } from "../config/schema.js";
import { ConfigError, type Secrets } from "../config/load.js";
import type { GatewayEnv } from "./context.js";
import { errorResponse, GatewayError } from "./errors.js";
import { Logger, Redactor, stdoutSink, type LogSink } from "./log.js";
import { TenantDirectory } from "./identity/tenants.js";
import { identifyKey } from "../middleware/identify/index.js";
import { metricsTokenCheck } from "./identity/caller.js";
import { fetchTransport, type UpstreamTransport } from "./platform/transport.js";
import { Upstream, pathAndQuery } from "./platform/upstream.js";
import { UpstreamAccounts } from "./platform/accounts.js";
import { requestId } from "../middleware/request-id/index.js";
import { accessLog } from "../middleware/access-log/index.js";
import { validHost } from "../middleware/valid-host/index.js";
import { gatewayCors } from "../middleware/cors/index.js";
import { publicHostsOnly } from "../middleware/public-host/index.js";
import { ownHandlers } from "./operators/http/own-routes.js";
import { fetchWebSocketRelay, type WebSocketRelay } from "./platform/websocket.js";
import { webPlatform, type PlatformSpeed } from "./platform/speed.js";
import { memoryStores } from "./state/memory.js";
import type { StateStores } from "./state/types.js";
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
import {
  AccountWallets,
  localWalletSigner,
  PaymentReconciler,
  PaymentSigner,
  paymentsMemory,
  tenantAmounts,
  type WalletSigner,
} from "./payments/index.js";
import { normalisingFetch } from "../middleware/normalize/index.js";
import { splitRequestUrl } from "./platform/request-url.js";
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
import { clientAddressOf, trustedProxyMatcher } from "./platform/forwarded.js";
import { RememberingRouter } from "./platform/remembering-router.js";
import { metricsHandlers } from "./operators/http/metrics-route.js";
import { readyHandlers } from "./operators/http/ready-route.js";
import { Readiness } from "./operators/actions/readiness.js";
import { pollTenantStore, TenantSync } from "./identity/tenant-sync.js";
import { operatorHandlers } from "./operators/http/admin/index.js";
import { consolePages } from "./console/routes.js";
import { ROUTES, type RouteRow } from "./routing/table.js";
import { keyUseRecorder } from "./identity/key-usage.js";
import { BackgroundWork } from "./platform/background.js";
import { moneyListener } from "./operators/alerts/money-listener.js";
import { AlertMonitor, type AlertSources } from "./operators/alerts/alert-monitor.js";
import { WebhookDispatcher } from "./operators/alerts/webhooks.js";
import { SavingsCounter } from "./operators/actions/savings.js";
import { RuntimeCustody } from "./sandboxes/custody.js";
import { publicHostsWritten } from "./sandboxes/port-hosts.js";
import { docsHandlers, type DocsAssets } from "./operators/http/docs.js";
import { traceRequests } from "../middleware/trace/index.js";
import type { Tracer } from "./telemetry/tracing.js";
import { RequestRecorder } from "./telemetry/request-recorder.js";
import { mcpHandlers } from "./mcp/endpoint.js";
import { accessSignIn, oidcSignIn } from "./identity/sign-in.js";

export interface GatewayDeps {
  secrets: Secrets;
  /** Upstream transport; the Node entry passes undici, Workers use fetch. */
  transport?: UpstreamTransport;
  /** WebSocket relay; the Node entry passes the `ws` relay, Workers hand sockets through with fetch. */
  webSocketRelay?: WebSocketRelay;
  /** The TCP peer's address, for `server.trustedProxies`; the Node entry passes it, Workers have none. */
  peerAddress?: GatewayServices["peerAddress"];
  /** The runtime's speed helpers for this gateway; the Node entry passes its own, elsewhere the Web default. */
  platform?: PlatformSpeed;
  /** Shared state; memory by default, Redis or Durable Objects for fleets. */
  stores?: StateStores;
  logSink?: LogSink;
  /** Metrics; the Node entry passes prom-client's, Workers keep in-process counters (src/telemetry/text-registry.ts). */
  metrics?: GatewayMetrics;
  now?: () => number;
  instanceId?: string;
  /** Where the wallet and team-credit alert rules read their figures (default: readiness's wallet probe, the upstream). */
  alertSources?: AlertSources;
  /** Traces when tracing.otlpEndpoint is set (OpenTelemetry on Node, OTLP over fetch on Workers); none: nothing traced, nothing spent. */
  tracer?: Tracer;
  /** The docs page's assets (swagger-ui-dist); the Node entry reads them from node_modules, Workers have none. */
  docsAssets?: DocsAssets;
  /** Alert webhooks; the Node entry passes one that checks the resolved address and connects to it. */
  webhookSender?: GatewayServices["webhookSender"];
  /**
   * What holds the wallet's key when it is not the local TOLLGATE_WALLET_KEY (`[wallet] signer`): the Node entry opens
   * a PKCS#11 token (src/platform/node/pkcs11-signer.ts). The gateway closes it when it closes.
   */
  walletSigner?: WalletSigner;
  /**
   * The accounts' wallets held in a remote signer (`walletSigner` of [[upstream.accounts]]), by account id: opened by
   * the Node entry (src/platform/node/remote-signer.ts). The gateway closes them when it closes.
   */
  accountWalletSigners?: Record<string, WalletSigner>;
}

export interface Gateway {
  app: Hono<GatewayEnv>;
  services: GatewayServices;
  logger: Logger;
  upstream: Upstream;
  directory: TenantDirectory;
  stores: StateStores;
  /** Settles held payments from the chain; the Node entry runs it on a timer. */
  reconciler: PaymentReconciler;
  /** Evaluates the alert rules and delivers webhooks due; the Node entry runs it on a timer, Workers on the cron. */
  alerts: AlertMonitor;
  /**
   * Waits up to `backgroundMs` (default 2 s) for background work still running (an alert webhook being delivered, its
   * audit record), then releases timers and connections held by the gateway's state.
   */
  close(backgroundMs?: number): Promise<void>;
  /**
   * Secrets re-read where they are kept (a file changed, docs/secrets.md), each handed to its one holder as
   * createGateway did: the upstream key to `upstream` (from the next call), token secrets to `tokens` (the replaced one
   * verifies `tokenGraceMs` more), the webhook secret to the dispatcher, the metrics token to its check. Returns the
   * names of those that changed; never logs a value (each new one is added to the log's redactor).
   */
  rotateSecrets(next: RotatableSecrets, tokenGraceMs: number): string[];
}

/**
 * The secrets a running gateway takes anew (the wallet keys and the PKCS#11 PIN are read at start only):
 * `accountApiKeys` holds the keys of the accounts whose apiKeyFile was re-read, by account id.
 */
export type RotatableSecrets = Pick<Secrets, "upstreamApiKey" | "tokenSecrets" | "webhookSecret" | "metricsToken" | "accountApiKeys">;

/** The request's ExecutionContext where the runtime has one (Workers), so a sub-request's background work is kept alive. */
function executionContextOf(c: Context): ExecutionContext | undefined {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}

/**
 * The env a sub-request runs with: the client's, without its Node response object, so an answer the Node transport
 * would relay socket to socket (runtime plane, src/platform/node/direct-relay.ts) comes back to the caller as a Response instead
 * of being written to the client's connection.
 */
function subrequestEnv(env: unknown): unknown {
  if (!env || typeof env !== "object" || !("outgoing" in env)) return env;
  const { outgoing: _client, ...rest } = env as Record<string, unknown>;
  return rest;
}

/**
 * The signer `[wallet] signer` names: the local key (TOLLGATE_WALLET_KEY) or one the entry opened (deps.walletSigner);
 * none when no key is configured (paid calls answer 503). @throws ConfigError when the two disagree.
 */
function paymentSignerOf(config: TollgateConfig, deps: GatewayDeps): PaymentSigner | undefined {
  const kind = config.wallet.signer;
  if (kind === "local") return deps.secrets.walletKey ? new PaymentSigner(localWalletSigner(deps.secrets.walletKey)) : undefined;
  if (deps.secrets.walletKey)
    throw new ConfigError(
      [`TOLLGATE_WALLET_KEY: set, but wallet.signer is "${kind}": the key lives in the signer; unset it`],
      "environment",
    );
  if (!deps.walletSigner || deps.walletSigner.kind !== kind)
    throw new ConfigError([`wallet.signer: "${kind}" is opened by the Node entry (tollgate start); this runtime cannot`], "configuration");
  return new PaymentSigner(deps.walletSigner);
}

/**
 * The accounts' own wallets beside the gateway's `signer` (docs/accounts.md#wallets): walletKeyEnv / walletKeyFile are
 * local keys, each its own signer the one holder; walletSigner is a remote signer the Node entry opened. None
 * configured: the gateway's wallet pays every call, as before. @throws ConfigError naming the account's field.
 */
function accountWallets(config: TollgateConfig, deps: GatewayDeps, signer: PaymentSigner | undefined): AccountWallets {
  const keys = deps.secrets.accountWalletKeys ?? {};
  const byAccount = new Map<string, PaymentSigner>();
  config.upstream.accounts?.forEach((a, i) => {
    if (a.walletSigner) {
      const opened = deps.accountWalletSigners?.[a.id];
      if (!opened)
        throw new ConfigError(
          [`upstream.accounts[${i}].walletSigner: a remote signer is opened by the Node entry (tollgate start); this runtime cannot`],
          "configuration",
        );
      byAccount.set(a.id, new PaymentSigner(opened));
      return;
    }
    if (!a.walletKeyEnv && !a.walletKeyFile) return;
    const key = keys[a.id];
    if (!key)
      throw new ConfigError(
        [
          `upstream.accounts[${i}].${a.walletKeyFile ? "walletKeyFile" : "walletKeyEnv"}: account "${a.id}" names a wallet, but no key was read`,
        ],
        "environment",
      );
    byAccount.set(a.id, new PaymentSigner(localWalletSigner(key)));
  });
  return new AccountWallets(signer, byAccount);
}

/**
 * The upstream accounts ([[upstream.accounts]]; else the one of TOLLGATE_UPSTREAM_API_KEY): their breakers shown in
 * metrics and the log, and each session or sandbox seen to end freeing its account's slot.
 */
function upstreamAccounts(
  config: TollgateConfig,
  deps: GatewayDeps,
  stores: StateStores,
  metrics: GatewayMetrics,
  now: () => number,
): UpstreamAccounts {
  const accounts = new UpstreamAccounts(config.upstream, deps.secrets, stores.kv, now, stores.accountSlots);
  if (!accounts.configured) return accounts;
  for (const a of accounts.list) metrics.accountBreaker(a.id, "closed");
  accounts.events = {
    breaker: (account, state) => metrics.accountBreaker(account, state),
    spill: (account, reason) => metrics.accountSpill(account, reason),
  };
  const ownership = stores.ownership;
  const setActive = ownership.setActive.bind(ownership);
  ownership.setActive = async (kind, id, active) => {
    await Promise.all([setActive(kind, id, active), active ? undefined : accounts.ended(kind, id)]);
  };
  return accounts;
}

function randomSecret(): string {
  return [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

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
  const endedRetentionMs = config.state.endedRetentionDays * 86_400_000;
  // Owners are remembered per instance (an owner never changes once written): a control read's owner check costs no
  // state round trip once this instance has seen the resource (src/state/remembered-owners.ts).
  const stores = withRememberedOwners(withMeteredLedger(deps.stores ?? memoryStores(now, { endedRetentionMs }), metrics), {
    now,
    ttlMs: Math.min(OWNER_MEMORY_MS, endedRetentionMs),
  });
  const accounts = upstreamAccounts(config, deps, stores, metrics, now); // [the accounts' API keys' one holder]
  const upstream = new Upstream(config.upstream, deps.transport ?? fetchTransport, deps.secrets.upstreamApiKey, metrics, accounts);
  const tenantSync = new TenantSync(stores.tenants, directory, config.tenants, logger, now);
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
  const background = new BackgroundWork(logger);
  accounts.beside = (c, work, what) => background.run(c as Context | undefined, work, what);
  let metricsCheck = metricsTokenCheck(deps.secrets.metricsToken);
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
    tracer: deps.tracer,
    now,
    instanceId: deps.instanceId ?? crypto.randomUUID(),
    background: background.run.bind(background),
    onClose: (fn) => closers.push(fn),
    // [the metrics token's one holder]; read through, so a rotated token (rotateSecrets) applies to mounted rows too
    isMetricsToken: (bearer) => metricsCheck?.(bearer) ?? false,
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

  // One router for the app and the console's rows (app.route copies them in); see src/platform/remembering-router.ts.
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
  };
  // CORS preflights of the OAuth endpoints (browser-based MCP clients): any origin, no credentials.
  for (const path of OAUTH_CORS_PATHS) app.options(path, () => oauthPreflight());
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
        if (accounts.setApiKey(id, key)) changed.push(`accountApiKey:${id}`);
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
