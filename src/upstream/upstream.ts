// The gateway's side of the upstream: builds control-plane requests with the gateway's API key and maps failures.
import type { Context } from "hono";
import type { TollgateConfig } from "../../config/schema.js";
import type { GatewayEnv } from "../context.js";
import { GatewayError, errors } from "../errors.js";
import { splitRequestUrl } from "../web/request-url.js";
import {
  forwardableRequestHeaders,
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
import type * as z from "zod";
import { parseUpstreamJson, readWire } from "./records.js";
import type { AccountHold, UpstreamAccounts } from "./accounts.js";
import type { ResourceKind } from "../state/types.js";

/**
 * A creation to place among the tenant's upstream accounts (with [[upstream.accounts]]): set by the chain's placement
 * step on creating rows; the request's first upstream POST that addresses no held resource is placed (Upstream.call).
 */
export interface Placement {
  kind: ResourceKind;
  tenant: { id: string; accounts?: string[] };
  /** A resource the body names lives on this account: the creation must go there. */
  only?: string;
}

declare module "hono" {
  interface ContextVariableMap {
    /** The creation this request makes, to be placed (src/upstream/accounts.ts). */
    placement: Placement;
    /** The upstream account this request's creation went to, or the account of the resource it addresses. */
    upstreamAccount: string;
    /** The slot held on the account this request's creation went to, until its resource is counted (claimCreated). */
    accountHold: AccountHold;
    /** The account of a resource the request's body names (the body step): its creation must go there. */
    accountPin: string;
    /** Retries of safe calls left to this request, and until when (the per-request retry budget). */
    retryBudget: { left: number; until: number };
  }
}

/** Answers a creation may spill to the next account after: nothing was made (a limit, or the upstream said it failed). */
const SPILL_STATUSES = new Set([429, 500, 502, 503]);
/** Answers after which a safe call is tried again on the same account. */
const RETRY_STATUSES = new Set([502, 503, 504]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

export class Upstream {
  readonly origin: string;
  readonly allowedHosts: Set<string>;
  /** Set when tracing is on: each upstream call gets a client span, and its traceparent goes upstream. */
  tracer?: Tracer;

  constructor(
    private readonly config: TollgateConfig["upstream"],
    readonly transport: UpstreamTransport,
    private apiKey: string | undefined,
    private readonly metrics?: GatewayMetrics,
    /** The upstream accounts; with [[upstream.accounts]], every control call goes to one of them with its key. */
    readonly accounts?: UpstreamAccounts,
  ) {
    this.origin = config.baseUrl.replace(/\/+$/, "");
    const base = new URL(this.origin);
    this.allowedHosts = new Set([base.host, ...config.allowedHosts.map((h) => h.toLowerCase())]);
  }

  /** A rotated API key (its file changed): used from the next upstream call; calls under way keep the one they sent. */
  setApiKey(key: string): void {
    this.apiKey = key;
  }

  /** True when an upstream-provided URL points at a host the gateway is configured to follow. */
  isAllowedUrl(url: string): boolean {
    try {
      const u = new URL(url);
      return (
        ["http:", "https:", "ws:", "wss:"].includes(u.protocol) &&
        (this.allowedHosts.has(u.host.toLowerCase()) || this.allowedHosts.has(u.hostname.toLowerCase()))
      );
    } catch {
      return false;
    }
  }

  /** Control-plane headers with the API key of `account` (with [[upstream.accounts]]; else the one key). */
  controlHeaders(requestId: string, from?: Headers, account?: string): Headers {
    const h = from ? forwardableRequestHeaders(from) : new Headers();
    const key = this.accounts?.configured ? this.accounts.apiKey(account) : this.apiKey;
    if (!key)
      throw this.accounts?.configured
        ? new GatewayError(
            503,
            "upstream_not_configured",
            `The gateway has no API key for upstream account "${account ?? this.accounts.defaultId}".`,
          )
        : new GatewayError(503, "upstream_not_configured", "The gateway has no upstream API key; set TOLLGATE_UPSTREAM_API_KEY.");
    h.set("x-api-key", key);
    h.set("x-request-id", requestId);
    return h;
  }

  /**
   * Control-plane headers for a call made outside a request (the kill switch, settlement, the console): with several
   * accounts, the key of the account holding the resource `path` addresses (else of `account`, else the default one).
   */
  async headersFor(requestId: string, path: string, account?: string): Promise<Headers> {
    const held = this.accounts?.configured ? await this.accounts.accountOfPath(path) : undefined;
    return this.controlHeaders(requestId, undefined, held ?? account);
  }

  /**
   * Calls the upstream; network failures become 502/504 JSON errors. With [[upstream.accounts]], a control call goes
   * to one account: the call's, the request's, the addressed resource's (its custody record), or, for a creation, the
   * one placement picks (spilling to the next on a limit or a failure); each account's breaker and safe-call retries
   * apply.
   */
  async call(c: Context<GatewayEnv>, call: UpstreamCall): Promise<Response> {
    const accounts = this.accounts;
    if (call.withApiKey === false || !accounts?.configured) return this.callAs(c, call, undefined);
    accounts.sync(c);
    const placement = c.get("placement");
    // The addressed resource's account first: a request may read several resources (a list's details).
    let account = call.account ?? (await accounts.accountOfPath(call.path)) ?? c.get("upstreamAccount");
    if (account === undefined && placement && (call.method ?? "GET") === "POST") return this.place(c, call, placement, accounts);
    account ??= placement?.only ?? accounts.pick(placement?.tenant ?? c.get("tenant"))?.id ?? accounts.defaultId;
    if (!c.get("upstreamAccount")) c.set("upstreamAccount", account);
    return this.guarded(c, call, account, accounts);
  }

  /** One call to one account, through its breaker, with the request's retries for safe calls. */
  private async guarded(c: Context<GatewayEnv>, call: UpstreamCall, account: string, accounts: UpstreamAccounts): Promise<Response> {
    const breaker = accounts.breakers.get(account);
    const method = call.method ?? "GET";
    const safe = (method === "GET" || method === "HEAD") && call.body == null;
    const settings = this.config.breaker;
    for (let attempt = 0; ; attempt++) {
      if (breaker && !breaker.allow())
        throw new GatewayError(
          503,
          "upstream_account_unavailable",
          `Upstream account "${account}" is failing; its circuit breaker is open. Try again shortly.`,
        );
      const started = performance.now();
      let res: Response | undefined;
      let failure: unknown;
      try {
        res = await this.callAs(c, call, account);
      } catch (err) {
        failure = err;
      }
      breaker?.record(!res || res.status >= 500, performance.now() - started);
      accounts.sync(c);
      const retryable = safe && (!res || RETRY_STATUSES.has(res.status)) && !c.req.raw.signal?.aborted;
      if (retryable && attempt < settings.retries) {
        let budget = c.get("retryBudget");
        if (!budget) c.set("retryBudget", (budget = { left: settings.retries, until: Date.now() + settings.retryBudgetMs }));
        const wait = settings.retryBackoffMs * 2 ** attempt;
        if (budget.left > 0 && Date.now() + wait < budget.until) {
          budget.left--;
          if (res) await this.discard(c, res);
          this.metrics?.accountRetry(account);
          await sleep(wait);
          continue;
        }
      }
      if (res) return res;
      throw failure;
    }
  }

  /**
   * Places a creation: tries the tenant's accounts in placement order, and moves to the next only after an answer that
   * says nothing was made (429 limit, 500/502/503). No answer (a timeout, a dropped connection) is never tried
   * elsewhere: the first attempt may have made it. The body is held so each attempt sends the same bytes.
   */
  private async place(c: Context<GatewayEnv>, call: UpstreamCall, placement: Placement, accounts: UpstreamAccounts): Promise<Response> {
    const order = accounts.placementOrder(placement.tenant, placement.kind, placement.only);
    const body = call.body instanceof ReadableStream ? new Uint8Array(await new Response(call.body).arrayBuffer()) : call.body;
    const tried = new Set<string>();
    for (;;) {
      const rest = order.filter((a) => !tried.has(a.id));
      if (!rest.length) break;
      // A session or sandbox on accounts with limits: a slot held on the first with room by the fleet's count (one
      // state round trip); every one at its limit: in order anyway, the upstream's answer is the truth.
      const held = await accounts.hold(placement.kind, rest);
      const a = (held && rest.find((x) => x.id === held.account)) ?? rest[0]!;
      tried.add(a.id);
      const last = tried.size === order.length;
      const breaker = accounts.breakers.get(a.id)!;
      if (!breaker.allow()) {
        if (held) await accounts.drop(held);
        continue;
      }
      const started = performance.now();
      let res: Response;
      try {
        res = await this.callAs(c, { ...call, body, headers: call.headers ? new Headers(call.headers) : undefined }, a.id);
      } catch (err) {
        // No answer: it may have been made, so its slot stays held until the lease ends.
        breaker.record(true, performance.now() - started);
        accounts.sync(c);
        throw err;
      }
      breaker.record(res.status >= 500, performance.now() - started);
      accounts.sync(c);
      if (!res.ok && held) await accounts.drop(held);
      if (SPILL_STATUSES.has(res.status) && !last) {
        if (res.status === 429) accounts.noteFull(a.id, placement.kind);
        accounts.events.spill?.(a.id, res.status === 429 ? "limit" : "failed");
        await this.discard(c, res);
        continue;
      }
      c.set("upstreamAccount", a.id);
      if (held && res.ok) c.set("accountHold", held);
      return res;
    }
    throw new GatewayError(
      503,
      "upstream_accounts_unavailable",
      "No upstream account this tenant may use can take new work now (each is failing or at its limit); try again shortly.",
    );
  }

  /** One call with `account`'s key (undefined: the one key, or none for calls without it). */
  private callAs(c: Context<GatewayEnv>, call: UpstreamCall, account: string | undefined): Promise<Response> {
    const requestId = c.get("requestId");
    let headers: Headers;
    if (call.withApiKey === false) {
      headers = call.headers ?? new Headers();
      headers.set("x-request-id", requestId);
    } else {
      headers = this.controlHeaders(requestId, call.headers, account);
    }
    return this.send(
      c,
      { url: this.origin + call.path, method: call.method ?? "GET", headers, body: call.body },
      { timeoutMs: call.timeoutMs, detachFromClient: call.detachFromClient },
    );
  }

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
    const clientSignal = opts.detachFromClient ? undefined : raw.signal;
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

/**
 * Reads a JSON body from an upstream response, typed by its wire schema (src/wire/*, lenient: see readWire); a
 * non-JSON body becomes a 502 that says so. An empty body reads as an empty record; without a schema, the value as parsed.
 */
export async function upstreamJson(res: Response): Promise<unknown>;
export async function upstreamJson<S extends z.ZodType<object>>(res: Response, schema: S): Promise<z.output<S>>;
export async function upstreamJson(res: Response, schema?: z.ZodType<object>): Promise<unknown> {
  const text = await res.text();
  let value: unknown = {};
  if (text) {
    try {
      value = parseUpstreamJson(text);
    } catch {
      throw new GatewayError(502, "upstream_bad_response", "The upstream answered with something that is not JSON.");
    }
  }
  return schema ? readWire(schema, value) : value;
}

/** Path plus query string of the client's request. */
export function pathAndQuery(c: Context): string {
  const u = splitRequestUrl(c.req.url);
  return u.path + u.query;
}
