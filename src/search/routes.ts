// Paid search and fetch: /x402/web/{search,fetch} paid with x402, /api/web/{search,fetch} billed to credits. The
// caller is the chain's; the steps read in order: idempotency → cache → coalesce → pay (or meter) → forward → answer.
import type { Context, ContextVariableMap } from "hono";
import { LRUCache } from "lru-cache";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import { forwardableRequestHeaders } from "../web/transport.js";
import { Upstream, pathAndQuery } from "../upstream/upstream.js";
import { hotHeader } from "../web/request-headers.js";
import { answerResponse, canonicalJson, readAnswer, sha256Hex, type Answer } from "./answer.js";
import { AnswerCache, Coalescer } from "./cache.js";
import { withIdempotency } from "./idempotency.js";
import { fleetClaim, type FleetClaim } from "./fleet-coalesce.js";
import { billCredits, type Paid, payX402, servedUnpaid, type Shown } from "../payments/index.js";
import { callerCap, callerTenant } from "../identity/caller.js";
import { jsonBody, jsonBodyNow, type JsonBody } from "../routing/json-body.js";
import type { RouteRow } from "../routing/table.js";
import type { Handlers } from "../routing/handlers.js";

/** A search's credit hold: one upstream call, so an hour is ample; left open past it (a crash), it is committed. */
const CALL_HOLD_MS = 3_600_000;

export function paidSearchHandlers(services: GatewayServices): Handlers {
  const { config, upstream, platform } = services;
  const cache = new AnswerCache({ maxBytes: config.cache.maxBytes, ttlSeconds: config.cache.ttlSeconds });
  const coalescer = new Coalescer<Fetched>(services.sharedWaits);
  const fingerprints = new RequestFingerprints();
  const shareable = (a: Answer) => config.cache.enabled && a.status === 200 && isCompletedJob(a);

  // Not async: a cache hit of a body seen lately (the hot path) is answered with no promise of its own; each step that
  // has to wait (a body still arriving, a new body's print, an Idempotency-Key, a miss, a budget read) continues on a
  // promise. A sync throw reaches Hono's error handler as a rejection would.
  const searchLike = (c: Context<GatewayEnv>, row: RouteRow): Response | Promise<Response> => {
    const body = jsonBodyNow(c, platform);
    return body ? searchWith(c, row, body) : jsonBody(c, platform).then((b) => searchWith(c, row, b));
  };

  const searchWith = (c: Context<GatewayEnv>, row: RouteRow, body: JsonBody): Response | Promise<Response> => {
    const tenant = callerTenant(c);
    if (tenant.paysForItself) return passThrough(c, row, body.text);
    // A body seen lately is not parsed here (middleware/body-limit's JsonBody parses when read).
    const print = fingerprints.known(row.path, body.text);
    return print
      ? searchPrinted(c, row, tenant, body.text, print)
      : fingerprints.of(row.path, body.text, body.json).then((p) => searchPrinted(c, row, tenant, body.text, p));
  };

  /** The client pays the upstream itself: its payment headers pass through untouched, nothing is charged here. */
  const passThrough = async (c: Context<GatewayEnv>, row: RouteRow, text: string): Promise<Response> => {
    const h = forwardableRequestHeaders(c.req.raw.headers);
    for (const n of ["payment-signature", "x-payment"]) {
      const v = c.req.header(n);
      if (v) h.set(n, v);
    }
    const res = await upstream.call(c, {
      method: "POST",
      path: pathAndQuery(c),
      headers: h,
      body: text,
      withApiKey: row.pay === "credits", // [the operator's key goes with a credit-billed call, never with an x402 one]
    });
    return Upstream.relay(res);
  };

  const searchPrinted = (
    c: Context<GatewayEnv>,
    row: RouteRow,
    tenant: Tenant,
    text: string,
    print: Print,
  ): Response | Promise<Response> => {
    const cacheKey = cacheKeyOf(print, config.cache.scope === "shared" ? "*" : tenant.id);
    const cc = (hotHeader(platform, c, "cache-control") ?? "").toLowerCase();
    const call: PaidSearch = {
      c,
      row,
      tenant,
      cap: callerCap(c),
      text,
      fingerprint: print.fingerprint,
      cacheKey,
      cc,
      bypass: !config.cache.enabled || cc.includes("no-cache") || cc.includes("no-store"),
      maxAgeMs: print.maxAgeMs,
      started: services.now(),
      f: c.get("logFields"),
    };
    const idemKey = hotHeader(platform, c, "idempotency-key");
    if (idemKey) return idempotent(call, idemKey).then((p) => answered(call, p));
    const hit = cached(call);
    return hit ? answered(call, hit) : produceElsewhere(call).then((p) => answered(call, p));
  };

  /** The answer kept under an Idempotency-Key (its first request's, replayed), or produced and kept now. */
  const idempotent = async (call: PaidSearch, idemKey: string): Promise<Produced> => {
    let produced: Produced | undefined;
    const r = await withIdempotency(services, call.tenant.id, idemKey, call.fingerprint, async () => {
      const p = cached(call) ?? (await produceElsewhere(call));
      produced = p;
      // Kept for a replay with what this request paid (nothing, for an answer it did not fetch).
      return p.paid === p.answer.paid ? p.answer : { ...p.answer, paid: p.paid };
    });
    if (!r.replayed && produced) return { ...produced, answer: r.answer, paid: r.answer.paid };
    return { answer: r.answer, how: "idempotent-replay", paid: r.answer.paid };
  };

  /**
   * The answer with what it cost and how it came. Its money figures (`x-tollgate-paid`, the budget left) come from the
   * money side once: with the paid call's answer, or, for an answer that never reached the payer, from `servedUnpaid`
   * (which announces a hit's or a joined call's savings).
   */
  const answered = (call: PaidSearch, { answer, how, paid, shown }: Produced): Response | Promise<Response> => {
    const f = call.f;
    // `paid` is what was paid upstream with x402; a credit-billed call's bill is the meter's `credits` field, set where
    // it was billed (counted in both, the request log showed twice the ledger's spend).
    if (call.row.pay !== "credits") f.paid = paid;
    f.cache = how;
    const figures = shown ?? servedUnpaid(services, call.c, call.tenant, { how, saved: f.saved ?? 0n, paid });
    const remaining = figures.remaining;
    return typeof remaining === "string"
      ? respond(call.c, answer, how, figures.paid, remaining)
      : remaining.then((r) => respond(call.c, answer, how, figures.paid, r));
  };

  const respond = (c: Context<GatewayEnv>, answer: Answer, how: string, paid: string, remaining: string): Response => {
    // One record, written in place (no second object merged in): the answer's kept headers, then the gateway's.
    const headers = Object.assign({}, answer.headers);
    headers["x-tollgate-cache"] = how;
    headers["x-tollgate-paid"] = paid;
    headers["x-tollgate-budget-remaining"] = remaining;
    headers["cache-control"] = "private, no-store";
    // The request's id, which middleware/request-id sets after the handler: named here, the answer's record is already
    // as it will be written and is not copied to add it (src/host/node/unread-headers.ts).
    const id = c.get("requestId");
    if (id) headers["x-request-id"] = id;
    return answerResponse(answer, headers);
  };

  /** This instance's cached answer, without waiting (the hot path: no closure, no promise). */
  const cached = (s: PaidSearch): Produced | undefined => {
    if (s.bypass) return undefined;
    const hit = cache.get(s.cacheKey, services.now(), s.maxAgeMs);
    if (!hit) return undefined;
    s.f.saved = hit.paid; // [metrics: USD saved]
    return { answer: hit, how: "hit", paid: 0n };
  };

  /** Not cached here: fetched, or joined to a call in flight (here or elsewhere in the fleet). */
  const produceElsewhere = async (s: PaidSearch): Promise<Produced> => {
    if (s.bypass) {
      const { answer, shown } = await fetchAnswer(s);
      return { answer, how: "bypass", paid: answer.paid, shown };
    }
    // A client bounding the age joins only calls started now, which are fresh by definition.
    // One call per key in this process, and (through shared state) one per key across the fleet.
    const { value, leader } = await coalescer.run(s.cacheKey, () =>
      fetchAnswer(
        s,
        fleetClaim(services, s.cacheKey, { ttlMs: config.cache.ttlSeconds * 1000, maxAgeMs: s.maxAgeMs, share: shareable, context: s.c }),
      ),
    );
    if (leader && value.fetched) return { answer: value.answer, how: "miss", paid: value.answer.paid, shown: value.shown };
    if (!value.fetched) cache.set(s.cacheKey, { ...value.answer });
    // Published by another instance before this request came: that is a (fleet-wide) cache hit.
    const how = !value.fetched && value.answer.storedAt < s.started ? "hit" : "coalesced";
    s.f.saved = value.answer.paid; // [metrics: USD saved]
    return { answer: value.answer, how, paid: 0n };
  };

  /** How a search is sent upstream, with the payment header when given. */
  const senderOf = (s: PaidSearch) => {
    const { c, row, text } = s;
    const path = pathAndQuery(c);
    const headers = forwardableRequestHeaders(c.req.raw.headers, ["idempotency-key", "cache-control"]);
    headers.set("content-type", "application/json");
    const send = (payment?: [string, string]) => {
      const h = new Headers(headers);
      if (payment) h.set(payment[0], payment[1]);
      return upstream.call(c, { method: "POST", path, headers: h, body: text, withApiKey: row.pay === "credits" });
    };
    return { send, clientPaid: headers.has("payment-signature") || headers.has("x-payment") };
  };

  /**
   * The search's call, entered once into the money side (src/payments/index.ts) with the fleet's claim when it
   * coalesces: an x402 row's by the payer, a credit-billed row's per-call bill (its meter settles here, `settles:
   * "handler"`) by the credit meter. The money side answers once: the paid answer with its figures, or the answer
   * another instance published (what it started beside the claim given back there).
   */
  const paidCall = (s: PaidSearch, claim?: FleetClaim): Promise<Paid<Answer>> => {
    const { send, clientPaid } = senderOf(s);
    const { c, row, tenant, cap } = s;
    const meter = row.meter;
    const asked = { claim: claim?.turn, figures: true };
    if (row.pay === "x402")
      return payX402<Answer>({
        services,
        tenant,
        route: row.name,
        fingerprint: s.fingerprint,
        cap,
        context: c,
        send,
        clientPaid,
        ...asked,
      });
    if (row.pay === "credits" && meter?.per === "call")
      return billCredits<Answer>({
        services,
        c,
        row: row.name,
        tenant,
        cap,
        charge: { per: "call", meter, holdMs: CALL_HOLD_MS },
        send,
        settleBehind: true,
        ...asked,
      });
    throw new Error(`route ${row.name}: the paid search runs x402 rows and per-call credit rows only`);
  };

  /** The upstream's answer, paid (x402) or billed (credits), and kept when it may be reused; or the fleet's. */
  const fetchAnswer = async (s: PaidSearch, claim?: FleetClaim): Promise<Fetched> => {
    let answer: Answer;
    let shown: Shown | undefined;
    try {
      const out = await paidCall(s, claim);
      if ("elsewhere" in out) return { answer: out.elsewhere, fetched: false };
      answer = await readAnswer(out.response, out.paid, services.now());
      shown = out.shown;
    } catch (err) {
      await claim?.failed();
      throw err;
    }
    claim?.done(answer);
    if (!s.cc.includes("no-store") && config.cache.enabled && answer.status === 200 && isCompletedJob(answer))
      cache.set(s.cacheKey, answer);
    return { answer, fetched: true, shown };
  };

  return { "paid.search": searchLike };
}

/** One paid search or fetch as the handler decided it: what the cache, coalescing and the upstream call read. */
interface PaidSearch {
  c: Context<GatewayEnv>;
  row: RouteRow;
  tenant: Tenant;
  cap: { id: string; amount: bigint } | undefined;
  text: string;
  fingerprint: string;
  cacheKey: string;
  /** The request's Cache-Control, lower case. */
  cc: string;
  bypass: boolean;
  maxAgeMs: number | undefined;
  started: number;
  /** The access log's fields (middleware/access-log). */
  f: ContextVariableMap["logFields"];
}

/**
 * An answer and how it came; `paid` is what this request paid for it (0 for one it did not fetch itself); `shown`: the
 * money figures the payer handed back with an answer it paid for.
 */
type Produced = {
  answer: Answer;
  how: "hit" | "miss" | "coalesced" | "bypass" | "idempotent-replay";
  paid: bigint;
  shown?: Shown;
};

/** What fetching gave: this instance's paid answer (`fetched`, with its figures), or the one the fleet published. */
type Fetched = { answer: Answer; fetched: boolean; shown?: Shown };

function isCompletedJob(a: Answer): boolean {
  try {
    const j = JSON.parse(new TextDecoder().decode(a.body));
    return j?.status === undefined || j.status === "completed";
  } catch {
    return false;
  }
}

/** What a body's text decides once: its fingerprint, how old an answer it takes, and its last cache key. */
interface Print {
  fingerprint: string;
  maxAgeMs: number | undefined;
  /** The cache key last made from it, and its scope (a tenant, or "*" when shared): the same string, its hash kept. */
  key?: { scope: string; key: string };
}

/**
 * Hash of a request's canonical body (key order and maxAgeSeconds do not matter), remembered per route for repeated
 * bodies (bounded in count and bytes), with what else the text decides: a body seen again is not parsed here.
 */
class RequestFingerprints {
  private readonly byRoute = new Map<string, LRUCache<string, Print>>();

  private seen(route: string): LRUCache<string, Print> {
    let lru = this.byRoute.get(route);
    if (!lru) {
      lru = new LRUCache<string, Print>({ max: 4096, maxSize: 2 * 1024 * 1024, sizeCalculation: (_v, k) => k.length + 128 });
      this.byRoute.set(route, lru);
    }
    return lru;
  }

  /** The print of a body seen lately, without waiting. */
  known(route: string, text: string): Print | undefined {
    return this.byRoute.get(route)?.get(text);
  }

  /** The body's print: its fingerprint is the hash of its canonical JSON without maxAgeSeconds. */
  async of(route: string, text: string, json: Record<string, unknown>): Promise<Print> {
    const seen = this.seen(route);
    let p = seen.get(text);
    if (!p) {
      const { maxAgeSeconds, ...keyed } = json;
      p = {
        fingerprint: await sha256Hex(`${route}\n${canonicalJson(keyed)}`),
        maxAgeMs: typeof maxAgeSeconds === "number" && maxAgeSeconds >= 0 ? maxAgeSeconds * 1000 : undefined,
      };
      seen.set(text, p);
    }
    return p;
  }
}

/** A print's cache key in a scope; the last one made is kept (one per print, so the memo stays bounded). */
function cacheKeyOf(p: Print, scope: string): string {
  if (p.key?.scope !== scope) p.key = { scope, key: `${scope}:${p.fingerprint}` };
  return p.key.key;
}
