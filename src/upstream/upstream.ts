// The gateway's side of the upstream: builds control-plane requests with the gateway's API key (of the account a call
// goes to), places creations among the upstream accounts, retries safe calls; one exchange is exchange.ts's.
import type { Context } from "hono";
import type { TollgateConfig } from "../../config/schema.js";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import { splitRequestUrl } from "../web/request-url.js";
import { forwardableRequestHeaders, type UpstreamTransport } from "../web/transport.js";
import type { GatewayMetrics } from "../telemetry/gateway-metrics.js";
import { UpstreamExchange, type UpstreamCall } from "./exchange.js";
import type * as z from "zod";
import { parseUpstreamJson, readWire } from "./records.js";
import type { AccountHold, UpstreamAccounts } from "./accounts.js";
import { CredentialWatch } from "./upstream-credentials.js";
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

/**
 * The upstream as the gateway calls it: the API key (of the account the call goes to), the accounts' placement,
 * breakers and safe-call retries; one exchange (timeouts, relaying, tracing, what it logs and measures) is
 * UpstreamExchange's (exchange.ts).
 */
export class Upstream extends UpstreamExchange {
  readonly origin: string;
  readonly allowedHosts: Set<string>;
  /** The gateway's own key, watched: a 401/403 to it answers tenants 502 upstream_credentials_rejected (./upstream-credentials.ts). */
  readonly credentials: CredentialWatch;

  constructor(
    config: TollgateConfig["upstream"],
    transport: UpstreamTransport,
    private apiKey: string | undefined,
    metrics?: GatewayMetrics,
    /** The upstream accounts; with [[upstream.accounts]], every control call goes to one of them with its key. */
    readonly accounts?: UpstreamAccounts,
  ) {
    super(config, transport, metrics);
    this.origin = config.baseUrl.replace(/\/+$/, "");
    this.credentials = new CredentialWatch(metrics);
    const base = new URL(this.origin);
    this.allowedHosts = new Set([base.host, ...config.allowedHosts.map((h) => h.toLowerCase())]);
  }

  /** A rotated API key (its file changed): used from the next upstream call; calls under way keep the one they sent. */
  setApiKey(key: string): void {
    this.apiKey = key;
    this.credentials.rotated();
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
    const sent = this.send(
      c,
      { url: this.origin + call.path, method: call.method ?? "GET", headers, body: call.body },
      { timeoutMs: call.timeoutMs, detachFromClient: call.detachFromClient },
    );
    if (call.withApiKey === false) return sent;
    return sent.then((res) => this.credentials.check(res, account ?? this.accounts?.defaultId ?? "default"));
  }
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
