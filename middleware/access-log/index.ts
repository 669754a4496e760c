// Writes one structured line per request (tenant, route, status, client, user agent, duration, upstream latency and
// bytes, paid amount) and counts it in the metrics. Secrets never reach it.
import type { Context, MiddlewareHandler } from "hono";
import type { Logger } from "../../src/log.js";
import type { GatewayMetrics } from "../../src/telemetry/gateway-metrics.js";
import { routeLabel } from "../../src/telemetry/route-label.js";
import { RequestRecorder } from "../../src/telemetry/request-recorder.js";

export interface AccessLogOptions {
  /** Counts each request (tollgate_requests_total, the latency histogram, cache outcomes). */
  metrics?: GatewayMetrics;
  /** The client's address (socket peer, or X-Forwarded-For behind a trusted proxy); see src/web/client-address.ts. */
  clientAddress?: (c: Context) => string | undefined;
  now?: () => number;
  /** The tenants' request log (src/telemetry/request-recorder.ts): each request a tenant made, written beside it. */
  requests?: RequestRecorder;
  /** Epoch ms, for the request log's records. */
  clock?: () => number;
}

const MAX_USER_AGENT = 256;

/** Fields the access log writes for a request, filled in along the chain. */
interface RequestLogFields {
  tenant?: string;
  route?: string;
  /** Atomic units paid upstream for this request. */
  paid?: bigint;
  cache?: string;
  /** Atomic units a cached or coalesced answer saved (its price when it was first paid). */
  saved?: bigint;
  /** Time to response headers of the upstream call(s), summed, in ms (src/upstream/exchange.ts). */
  upstreamMs?: number;
  /** Bytes sent upstream in request bodies, when known. */
  upstreamBytesOut?: number;
  /** Bytes the upstream announced in its response bodies (Content-Length), when known. */
  upstreamBytesIn?: number;
  /** The gateway's error code when it refused or failed the request (set where the error is answered). */
  code?: string;
  [k: string]: unknown;
}

declare module "hono" {
  interface ContextVariableMap {
    /** Filled in along the chain, written once by the access log. */
    logFields: RequestLogFields;
  }
}

/**
 * @example app.use(accessLog(logger, { metrics, clientAddress: clientAddress(peer) }))
 */
export function accessLog(logger: Logger, opts: AccessLogOptions = {}): MiddlewareHandler {
  const now = opts.now ?? (() => performance.now());
  const { metrics, clientAddress } = opts;
  const clock = opts.clock ?? Date.now;
  const requests = opts.requests?.enabled ? opts.requests : undefined;
  const logging = logger.enabled("info");
  // The request log keeps the path redacted as this log's line is (a key, token or JWT a client put in a path).
  const redactPath = (path: string) => logger.redactor.text(path);
  return async function accessLogMiddleware(c, next) {
    // The chain records what it decided here whether or not a line is written. The line is this object: it starts with
    // the request's own fields, the chain adds its own after them (tenant, route, paid...), and the rest is filled in
    // below, in the order the line has always had (no copy of the fields per request).
    const f: RequestLogFields = logging ? { requestId: c.get("requestId"), method: c.req.method, path: c.req.path } : {};
    c.set("logFields", f);
    // Nothing more to do when the level drops request lines and nobody counts requests.
    if (!logging && !metrics && !requests) return next();
    const start = now();
    const at = requests ? clock() : 0;
    try {
      await next();
    } finally {
      const seconds = (now() - start) / 1000;
      const tenant = f.tenant ?? c.get("tenant")?.id;
      // A response the Node fast path wrote itself records its status here (c.res is only a marker then).
      const status = typeof f.status === "number" ? f.status : c.res.status;
      if (metrics) {
        metrics.request(routeLabel(c), c.req.method, status, tenant ?? "", seconds);
        if (f.cache) metrics.cache(f.cache, f.saved);
      }
      if (requests) {
        const r = RequestRecorder.recordOf(c, f, status, Math.round(seconds * 10_000) / 10, at, redactPath);
        if (r) requests.record(c, r);
      }
      if (logging) {
        const ua = c.req.header("user-agent");
        // A field the chain set keeps its place and takes its final value (as a later key of an object literal would);
        // paid and saved, bigints, are written as their digits in quotes (src/log.ts).
        f.tenant = tenant;
        f.status = status;
        f.client = clientAddress?.(c);
        f.userAgent = ua && ua.length > MAX_USER_AGENT ? ua.slice(0, MAX_USER_AGENT) : ua;
        f.durationMs = Math.round(seconds * 10_000) / 10;
        logger.info("request", f);
      }
    }
  };
}
