// createGateway(config, deps): the runtime-agnostic Hono app. The whole request path, in the order it runs:
//
//   request-id → access-log → /_tollgate (own endpoints)
//     → exposed ports (by Host: <port>-<id>.<gateway host>)      gateway token or browser cookie → upstream port
//     → /sandbox/<id>/…  runtime plane                            gateway token → upstream runtime token injected
//     → /devtools/…      CDP relay                                gateway token → upstream wsEndpoint
//     → /api/*, /x402/*  tenant surfaces                          tenant key → scope → quota → cache → pay → forward → rewrite
import { Hono } from "hono";
import type { TollgateConfig } from "../config/schema.js";
import type { Secrets } from "../config/load.js";
import type { GatewayEnv } from "./context.js";
import { errorResponse, GatewayError } from "./errors.js";
import { Logger, Redactor, stdoutSink, type LogSink } from "./log.js";
import { TenantDirectory } from "./tenants.js";
import { authenticateTenant } from "../middleware/authenticate/index.js";
import { fetchTransport, type UpstreamTransport } from "./transport.js";
import { Upstream, pathAndQuery } from "./upstream.js";
import { requestId } from "../middleware/request-id/index.js";
import { accessLog } from "../middleware/access-log/index.js";
import { ownRoutes, OWN_PREFIX } from "./routes/own.js";
import { scopeForPath } from "./routes/scopes.js";
import { fetchWebSocketRelay, type WebSocketRelay } from "./websocket.js";
import { memoryStores } from "./state/memory.js";
import type { StateStores } from "./state/types.js";
import { TokenService } from "./tokens.js";
import type { GatewayServices } from "./services.js";
import { isStateUnavailable } from "./state/errors.js";
import { exposedPorts } from "./routes/ports.js";
import { runtimeRoutes } from "./routes/runtime.js";
import { sandboxRoutes } from "./routes/sandboxes.js";
import { usageRoutes } from "./routes/usage.js";
import { cdpRoutes } from "./routes/cdp.js";
import { sessionRoutes } from "./routes/sessions.js";
import { tokenRoutes } from "./routes/tokens.js";
import { quotas } from "../middleware/quota/index.js";
import { rateLimit } from "../middleware/rate-limit/index.js";
import { x402Routes } from "./routes/x402.js";
import { PaymentReconciler } from "./payments/reconcile.js";
import { TenantSync } from "./operators/tenant-sync.js";
import { operatorRoutes } from "./routes/admin/index.js";

export interface GatewayDeps {
  secrets: Secrets;
  /** Upstream transport; the Node entry passes undici, Workers use fetch. */
  transport?: UpstreamTransport;
  /** WebSocket relay; the Node entry passes the `ws` relay, Workers hand sockets through with fetch. */
  webSocketRelay?: WebSocketRelay;
  /** Shared state; memory by default, Redis or Durable Objects for fleets. */
  stores?: StateStores;
  logSink?: LogSink;
  now?: () => number;
  instanceId?: string;
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
  /** Releases timers and connections held by the gateway's state. */
  close(): Promise<void>;
}

function randomSecret(): string {
  return [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export function createGateway(config: TollgateConfig, deps: GatewayDeps): Gateway {
  const now = deps.now ?? Date.now;
  const redactor = new Redactor().add(deps.secrets.upstreamApiKey, deps.secrets.walletKey, deps.secrets.tokenSecret, deps.secrets.webhookSecret);
  const logger = new Logger(deps.logSink ?? stdoutSink, config.server.logLevel, redactor, now);
  const directory = new TenantDirectory(config.tenants, now);
  const upstream = new Upstream(config.upstream, deps.transport ?? fetchTransport, deps.secrets.upstreamApiKey);
  const stores = deps.stores ?? memoryStores(now);
  const tenantSync = new TenantSync(stores.tenants, directory, config.tenants, logger, now);
  directory.setRefresher(() => tenantSync.fresh());
  if (!deps.secrets.tokenSecret) logger.info("token secret not set (TOLLGATE_TOKEN_SECRET); minted tokens will not survive a restart");
  const tokens = new TokenService(deps.secrets.tokenSecret ?? randomSecret(), stores.kv, now);
  const closers: Array<() => Promise<void> | void> = [() => stores.close()];
  const services: GatewayServices = {
    config,
    secrets: deps.secrets,
    logger,
    directory,
    tenantSync,
    upstream,
    stores,
    tokens,
    webSocketRelay: deps.webSocketRelay ?? fetchWebSocketRelay,
    now,
    instanceId: deps.instanceId ?? crypto.randomUUID(),
    onClose: (fn) => closers.push(fn),
  };

  const app = new Hono<GatewayEnv>();
  app.onError((err, c) => {
    if (isStateUnavailable(err)) logger.error("state store unavailable", { requestId: c.get("requestId"), error: String((err as Error).message) });
    else if (!(err instanceof GatewayError)) logger.error("unhandled", { requestId: c.get("requestId"), error: String((err as Error)?.stack ?? err) });
    return errorResponse(err, c.get("requestId"));
  });
  app.notFound((c) => errorResponse(new GatewayError(404, "not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}`), c.get("requestId")));

  app.use(requestId());
  app.use(accessLog(logger));
  const perTenantRate = rateLimit(services); // [mount: rate limit on every tenant request]
  for (const p of ["/api/*", "/x402/*", `${OWN_PREFIX}/*`, "/devtools/*"]) app.use(p, perTenantRate);
  app.route(OWN_PREFIX, ownRoutes(directory));
  app.route(OWN_PREFIX, operatorRoutes(services)); // admin API (/admin/*) and /openapi.json
  app.use(exposedPorts(services));
  app.route("/", runtimeRoutes(services));
  app.route("/", cdpRoutes(services));
  app.route(`${OWN_PREFIX}/tokens`, tokenRoutes(services));
  app.use(quotas(services)); // [mount: quotas, before every creation route below]
  app.route(OWN_PREFIX, usageRoutes(services));
  app.route("/", x402Routes(services));
  app.route("/", sandboxRoutes(services));
  app.route("/", sessionRoutes(services));

  // Remaining upstream surfaces, fronted for authenticated tenants and forwarded as they are.
  app.all("*", async (c) => {
    const path = new URL(c.req.url).pathname;
    const scope = scopeForPath(path);
    if (!scope) throw new GatewayError(404, "not_found", `No route for ${c.req.method} ${path}`);
    await authenticateTenant(c, directory, scope);
    const res = await upstream.call(c, { method: c.req.method, path: pathAndQuery(c), headers: c.req.raw.headers, body: c.req.raw.body });
    return Upstream.relay(res);
  });

  return {
    app,
    services,
    logger,
    upstream,
    directory,
    stores,
    reconciler: new PaymentReconciler(services),
    async close() {
      for (const fn of closers.reverse()) await fn();
    },
  };
}
