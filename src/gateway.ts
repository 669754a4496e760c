// createGateway(config, deps): the runtime-agnostic Hono app. The whole request path, in the order it runs, is here.
//
//   request-id → access-log → [/_tollgate own routes]
//              → authenticate (tenant key) → scope → surface route → forward → rewrite
import { Hono } from "hono";
import type { TollgateConfig } from "../config/schema.js";
import type { Secrets } from "../config/load.js";
import type { GatewayEnv } from "./context.js";
import { errorResponse, GatewayError } from "./errors.js";
import { Logger, Redactor, stdoutSink, type LogSink } from "./log.js";
import { TenantDirectory, requireScope, presentedKey } from "./tenants.js";
import { fetchTransport, type UpstreamTransport } from "./transport.js";
import { Upstream, pathAndQuery } from "./upstream.js";
import { requestId } from "../middleware/request-id/index.js";
import { accessLog } from "../middleware/access-log/index.js";
import { ownRoutes, OWN_PREFIX } from "./routes/own.js";
import { scopeForPath } from "./routes/scopes.js";
import { fetchWebSocketRelay, type WebSocketRelay } from "./websocket.js";

export interface GatewayDeps {
  secrets: Secrets;
  /** Upstream transport; the Node entry passes undici, Workers use fetch. */
  transport?: UpstreamTransport;
  /** WebSocket relay; the Node entry passes the `ws` relay, Workers hand sockets through with fetch. */
  webSocketRelay?: WebSocketRelay;
  logSink?: LogSink;
  now?: () => number;
}

export interface Gateway {
  app: Hono<GatewayEnv>;
  logger: Logger;
  upstream: Upstream;
  directory: TenantDirectory;
  /** Releases timers and connections held by the gateway's state. */
  close(): Promise<void>;
}

export function createGateway(config: TollgateConfig, deps: GatewayDeps): Gateway {
  const now = deps.now ?? Date.now;
  const redactor = new Redactor().add(deps.secrets.upstreamApiKey, deps.secrets.walletKey, deps.secrets.tokenSecret);
  const logger = new Logger(deps.logSink ?? stdoutSink, config.server.logLevel, redactor, now);
  const directory = new TenantDirectory(config.tenants, now);
  const upstream = new Upstream(config.upstream, deps.transport ?? fetchTransport, deps.secrets.upstreamApiKey);

  const app = new Hono<GatewayEnv>();
  app.onError((err, c) => {
    if (!(err instanceof GatewayError)) logger.error("unhandled", { requestId: c.get("requestId"), error: String((err as Error)?.stack ?? err) });
    return errorResponse(err, c.get("requestId"));
  });
  app.notFound((c) => errorResponse(new GatewayError(404, "not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}`), c.get("requestId")));

  app.use(requestId());
  app.use(accessLog(logger));
  app.route(OWN_PREFIX, ownRoutes(directory));

  // Everything else is the upstream's surface, fronted for authenticated tenants.
  app.all("*", async (c) => {
    const path = new URL(c.req.url).pathname;
    const scope = scopeForPath(path);
    if (!scope) throw new GatewayError(404, "not_found", `No route for ${c.req.method} ${path}`);
    const tenant = await directory.authenticate(presentedKey(c.req.raw.headers));
    c.set("tenant", tenant);
    c.get("logFields").tenant = tenant.id;
    requireScope(tenant, scope);
    const res = await upstream.call(c, {
      method: c.req.method,
      path: pathAndQuery(c),
      headers: c.req.raw.headers,
      body: c.req.raw.body,
    });
    return Upstream.relay(res);
  });

  const closers: Array<() => Promise<void> | void> = [];
  return {
    app,
    logger,
    upstream,
    directory,
    async close() {
      for (const c of closers.reverse()) await c();
    },
  };
}
