// One exchange with the upstream: the request sent through the transport (read by the gateway, or relayed to the
// client as it is), the wait for its headers timed, a client that goes away followed, failures mapped to 502/504 JSON
// errors, the call traced when tracing is on, its latency and bytes logged and measured. Upstream (upstream.ts) adds
// the API key, the accounts and the retries on top.
import type { Context } from "hono";
import type { TollgateConfig } from "../../config/schema.js";
import type { GatewayEnv } from "../context.js";
import { errors } from "../errors.js";
import {
  relayByRequest,
  relayResponse,
  setForwardHeader,
  toHeaders,
  UpstreamHeadersTimeout,
  type ForwardHeaders,
  type RelayedAnswer,
  type RelayOptions,
  type RelayRequest,
  type UpstreamTransport,
} from "../web/transport.js";
import type { GatewayMetrics } from "../telemetry/gateway-metrics.js";
import { routeLabel } from "../telemetry/route-label.js";
import { childSpan, type Tracer } from "../telemetry/tracing.js";

export interface UpstreamCall {
  method?: string;
  /** Path on the upstream, with query, e.g. `/api/sandbox/abc?x=1`. */
  path: string;
  headers?: Headers;
  body?: ReadableStream<Uint8Array> | Uint8Array | string | null;
  /** Send the API key (control plane) or not (x402, runtime with its own bearer). */
  withApiKey?: boolean;
  /** The upstream account to call (with [[upstream.accounts]]); default: the request's, else the addressed resource's. */
  account?: string;
  timeoutMs?: number;
  /** Keep going when the client goes away (work other requests wait on, such as a shared token renewal). */
  detachFromClient?: boolean;
}

export class UpstreamExchange {
  /** Set when tracing is on: each upstream call gets a client span, and its traceparent goes upstream. */
  tracer?: Tracer;

  constructor(
    protected readonly config: TollgateConfig["upstream"],
    readonly transport: UpstreamTransport,
    protected readonly metrics?: GatewayMetrics,
  ) {}

  /**
   * Sends one request to an absolute upstream URL; the answer is the gateway's to read. The timeout covers only the
   * wait for response headers (streamed bodies are not cut); a client that goes away aborts it; failures become 502/504
   * JSON errors.
   */
  send(
    c: Context<GatewayEnv>,
    req: { url: string; method: string; headers: ForwardHeaders; body?: ReadableStream<Uint8Array> | Uint8Array | string | null },
    opts: { timeoutMs?: number; unavailableMessage?: string; detachFromClient?: boolean } = {},
  ): Promise<Response> {
    return this.exchange(c, req, opts, this.read);
  }

  /**
   * Sends a request whose answer goes back to the client as it is (the proxied planes: runtime, exposed ports,
   * presigned files), minus hop-by-hop headers (and Set-Cookie unless `keepSetCookie`). How it is relayed is the
   * transport's (UpstreamTransport.relay: on Node, socket to socket); the same timeouts, errors, log fields and metrics.
   */
  forward(
    c: Context<GatewayEnv>,
    req: { url: string; method: string; headers: ForwardHeaders; body?: ReadableStream<Uint8Array> | Uint8Array | string | null },
    opts: { unavailableMessage?: string; keepSetCookie?: boolean } = {},
  ): Promise<Response> {
    return this.exchange(c, req, opts, this.relayed);
  }

  /** send()'s exchange: the transport's Response, read by the gateway. */
  private readonly read = async (r: RelayRequest): Promise<RelayedAnswer> => {
    const response = await this.transport.request({ ...r, headers: toHeaders(r.headers), signal: r.signal() });
    return { response, contentLength: response.headers.get("content-length") };
  };

  /** forward()'s exchange: the transport's relay, or its request made relayable. */
  private readonly relayed = (r: RelayRequest, client: unknown, opts: RelayOptions): Promise<RelayedAnswer> =>
    this.transport.relay ? this.transport.relay(r, client, opts) : relayByRequest(this.transport, r, opts);

  /** One upstream exchange, traced when tracing is on. */
  private exchange(
    c: Context<GatewayEnv>,
    req: { url: string; method: string; headers: ForwardHeaders; body?: ReadableStream<Uint8Array> | Uint8Array | string | null },
    opts: { timeoutMs?: number; unavailableMessage?: string; detachFromClient?: boolean; keepSetCookie?: boolean },
    run: (r: RelayRequest, client: unknown, opts: RelayOptions) => Promise<RelayedAnswer>,
  ): Promise<Response> {
    return this.tracer ? this.traced(c, req, () => this.once(c, req, opts, run)) : this.once(c, req, opts, run);
  }

  /** Runs one upstream call in a client span (when the request is traced) whose traceparent the upstream receives. */
  private async traced(
    c: Context<GatewayEnv>,
    req: { url: string; method: string; headers: ForwardHeaders },
    run: () => Promise<Response>,
  ) {
    const span = childSpan(c, this.tracer, `upstream ${req.method}`, "client");
    if (!span) return run();
    setForwardHeader(req.headers, "traceparent", span.traceparent());
    span.setAttribute("http.request.method", req.method);
    span.setAttribute("url.path", new URL(req.url).pathname);
    try {
      const res = await run();
      span.setAttribute("http.response.status_code", res.status);
      span.end(res.status >= 500 ? `status ${res.status}` : undefined);
      return res;
    } catch (err) {
      span.end(String((err as { code?: string })?.code ?? "upstream_unavailable"));
      throw err;
    }
  }

  private async once(
    c: Context<GatewayEnv>,
    req: { url: string; method: string; headers: ForwardHeaders; body?: ReadableStream<Uint8Array> | Uint8Array | string | null },
    opts: { timeoutMs?: number; unavailableMessage?: string; detachFromClient?: boolean; keepSetCookie?: boolean },
    run: (r: RelayRequest, client: unknown, opts: RelayOptions) => Promise<RelayedAnswer>,
  ): Promise<Response> {
    const timeoutMs = opts.timeoutMs ?? this.config.timeoutMs;
    const raw = c.req.raw;
    if (this.transport.enforcesHeadersTimeout) {
      // No timer and no controller of our own: the transport times the headers; the client's signal (made only if the
      // transport asks for it) aborts it.
      const begun = performance.now();
      try {
        const { response, contentLength } = await run(
          {
            url: req.url,
            method: req.method,
            headers: req.headers,
            body: req.body,
            headersTimeoutMs: timeoutMs,
            signal: opts.detachFromClient ? noSignal : () => raw.signal,
          },
          c.env,
          opts,
        );
        this.observe(c, req.body, contentLength, performance.now() - begun, response.status);
        return response;
      } catch (err) {
        if (!raw.signal?.aborted) this.metrics?.upstreamFailed();
        if (err instanceof UpstreamHeadersTimeout) throw errors.upstreamTimeout();
        throw errors.upstreamUnavailable(opts.unavailableMessage);
      }
    }
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(new Error("upstream timeout")), timeoutMs);
    const clientSignal = opts.detachFromClient || this.transport.cancelledWithClient ? undefined : raw.signal;
    const onClientAbort = () => ctrl.abort(new Error("client went away"));
    clientSignal?.addEventListener?.("abort", onClientAbort, { once: true });
    const started = performance.now();
    try {
      const { response, contentLength } = await run(
        { url: req.url, method: req.method, headers: req.headers, body: req.body, signal: () => ctrl.signal },
        c.env,
        opts,
      );
      this.observe(c, req.body, contentLength, performance.now() - started, response.status);
      return response;
    } catch {
      if (!clientSignal?.aborted) this.metrics?.upstreamFailed();
      if (ctrl.signal.aborted && !clientSignal?.aborted) throw errors.upstreamTimeout();
      throw errors.upstreamUnavailable(opts.unavailableMessage);
    } finally {
      clearTimeout(timer);
      clientSignal?.removeEventListener?.("abort", onClientAbort);
    }
  }

  /** Drops an answer `forward` gave that will not be passed on (a 401 before a replay). */
  async discard(c: Context<GatewayEnv>, res: Response): Promise<void> {
    if (this.transport.discard?.(res, c.env)) return;
    await res.body?.cancel().catch(() => {});
  }

  /** Upstream latency and bytes into the request's log line, and the latency into the upstream histogram. */
  private observe(c: Context<GatewayEnv>, body: UpstreamCall["body"], contentLength: string | null, ms: number, status: number): void {
    const f = c.get("logFields");
    if (f) {
      f.upstreamMs = Math.round(((f.upstreamMs ?? 0) + ms) * 10) / 10;
      const out = bodyBytes(body, c);
      if (out !== undefined) f.upstreamBytesOut = (f.upstreamBytesOut ?? 0) + out;
      if (contentLength !== null && contentLength !== "") f.upstreamBytesIn = (f.upstreamBytesIn ?? 0) + Number(contentLength);
    }
    this.metrics?.upstream(routeLabel(c), ms / 1000, status >= 500);
  }

  /** Passes an upstream response back to the client (streaming), minus hop-by-hop headers. */
  static relay(res: Response, extraHeaders?: Record<string, string>): Response {
    return relayResponse(res, false, extraHeaders);
  }
}

const noSignal = () => undefined;

const utf8 = new TextEncoder();

/** Bytes of a request body: counted when in hand, the client's Content-Length when it streams through. */
function bodyBytes(body: UpstreamCall["body"], c: Context): number | undefined {
  if (body == null) return 0;
  if (typeof body === "string") return utf8.encode(body).byteLength;
  if (body instanceof Uint8Array) return body.byteLength;
  const len = c.req.header("content-length");
  return len ? Number(len) : undefined;
}
