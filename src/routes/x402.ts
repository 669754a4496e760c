// Paid surfaces: /x402/web/{search,fetch} (+ /api/web/*): authenticate → idempotency → cache → coalesce → pay → answer.
import { Hono, type Context } from "hono";
import { LRUCache } from "lru-cache";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { presentedKey, type Tenant } from "../tenants.js";
import { authenticateTenant } from "../../middleware/authenticate/index.js";
import { looksLikeGatewayToken, requireTokenScope } from "../tokens.js";
import { forwardableRequestHeaders } from "../transport.js";
import { Upstream, pathAndQuery } from "../upstream.js";
import { answerResponse, canonicalJson, readAnswer, sha256Hex, type Answer } from "../payments/answer.js";
import { AnswerCache, Coalescer } from "../payments/cache.js";
import { withIdempotency } from "../payments/idempotency.js";
import { fleetCoalesce, type FleetResult } from "../payments/fleet-coalesce.js";
import { atomicToUsd } from "../payments/money.js";
import { paidCall, tenantLimits } from "../payments/paid-call.js";
import { PaymentSigner } from "../payments/signer.js";
import { x402SessionRoutes } from "./x402-session.js";

const MAX_BODY = 1024 * 1024;

export interface Caller {
  tenant: Tenant;
  /** Set when the caller is a keyless search token with a spend cap. */
  cap?: { id: string; amount: bigint };
}

/** A tenant key, or a keyless search token (a gateway JWT with the "search" scope). */
export async function authenticateSearchCaller(c: Context<GatewayEnv>, services: GatewayServices): Promise<Caller> {
  const key = presentedKey(c.req.raw.headers);
  if (looksLikeGatewayToken(key)) {
    const token = await services.tokens.verify(key);
    requireTokenScope(token, "search");
    const tenant = services.directory.get(token.tenant);
    if (!tenant || !tenant.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant that minted this token is disabled.");
    c.set("tenant", tenant);
    c.get("logFields").tenant = tenant.id;
    return { tenant, cap: token.cap !== undefined ? { id: token.jti, amount: token.cap } : undefined };
  }
  return { tenant: await authenticateTenant(c, services.directory, "search") };
}

async function readJsonBody(c: Context): Promise<{ text: string; json: Record<string, unknown> }> {
  const text = await c.req.text();
  if (text.length > MAX_BODY) throw new GatewayError(413, "body_too_large", `Request bodies are limited to ${MAX_BODY} bytes.`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new GatewayError(400, "invalid_json", "The request body is not valid JSON; nothing was paid.");
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) throw new GatewayError(400, "invalid_body", "The request body must be a JSON object; nothing was paid.");
  return { text, json: json as Record<string, unknown> };
}

export async function budgetRemaining(services: GatewayServices, tenant: Tenant): Promise<string> {
  const limits = tenantLimits(tenant);
  const usage = await services.stores.ledger.usage(tenant.id, services.now());
  let rem: bigint | undefined;
  for (const w of ["daily", "monthly", "total"] as const) {
    const l = limits[w];
    if (l === undefined) continue;
    const left = l - usage[w];
    if (rem === undefined || left < rem) rem = left;
  }
  return rem === undefined ? "unlimited" : atomicToUsd(rem < 0n ? 0n : rem);
}

export function x402Routes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const { config, upstream } = services;
  const cache = new AnswerCache({ maxBytes: config.cache.maxBytes, ttlSeconds: config.cache.ttlSeconds });
  const coalescer = new Coalescer<FleetResult>();
  const fingerprints = new RequestFingerprints();
  const shareable = (a: Answer) => config.cache.enabled && a.status === 200 && isCompletedJob(a);
  const signer = services.secrets.walletKey ? new PaymentSigner(services.secrets.walletKey) : undefined;

  const searchLike = async (c: Context<GatewayEnv>) => {
    const caller = await authenticateSearchCaller(c, services);
    const { tenant } = caller;
    const route = new URL(c.req.url).pathname;
    c.get("logFields").route = route;
    const { text, json } = await readJsonBody(c);
    const path = pathAndQuery(c);

    if (tenant.paysForItself) {
      // The client pays the upstream itself: its payment headers pass through untouched, nothing is charged here.
      const h = forwardableRequestHeaders(c.req.raw.headers);
      for (const n of ["payment-signature", "x-payment"]) {
        const v = c.req.header(n);
        if (v) h.set(n, v);
      }
      const res = await upstream.call(c, { method: "POST", path, headers: h, body: text, withApiKey: route.startsWith("/api/") });
      return Upstream.relay(res);
    }

    const { maxAgeSeconds, ...keyed } = json;
    const fingerprint = await fingerprints.of(route, text, keyed);
    const cacheKey = `${config.cache.scope === "shared" ? "*" : tenant.id}:${fingerprint}`;
    const cc = (c.req.header("cache-control") ?? "").toLowerCase();
    const bypass = !config.cache.enabled || cc.includes("no-cache") || cc.includes("no-store");
    const maxAgeMs = typeof maxAgeSeconds === "number" && maxAgeSeconds >= 0 ? maxAgeSeconds * 1000 : undefined;

    const fetchFresh = async (): Promise<Answer> => {
      const headers = forwardableRequestHeaders(c.req.raw.headers, ["idempotency-key", "cache-control"]);
      headers.set("content-type", "application/json");
      const send = (payment?: [string, string]) => {
        const h = new Headers(headers);
        if (payment) h.set(payment[0], payment[1]);
        return upstream.call(c, { method: "POST", path, headers: h, body: text, withApiKey: route.startsWith("/api/") });
      };
      const result = await paidCall({ services, signer, tenant, route, fingerprint, cap: caller.cap }, send);
      const answer = await readAnswer(result.response, result.paid, services.now());
      if (!cc.includes("no-store") && config.cache.enabled && answer.status === 200 && isCompletedJob(answer)) cache.set(cacheKey, answer);
      return answer;
    };

    const started = services.now();
    const f = c.get("logFields");
    const produce = async (): Promise<{ answer: Answer; how: "hit" | "miss" | "coalesced" | "bypass" }> => {
      if (bypass) return { answer: await fetchFresh(), how: "bypass" };
      const hit = cache.get(cacheKey, services.now(), maxAgeMs);
      if (hit) {
        f.saved = hit.paid; // [metrics: USD saved]
        return { answer: { ...hit, paid: 0n }, how: "hit" };
      }
      // A client bounding the age joins only calls started now, which are fresh by definition.
      // One call per key in this process, and (through shared state) one per key across the fleet.
      const { value, leader } = await coalescer.run(cacheKey, () =>
        fleetCoalesce(services, cacheKey, { ttlMs: config.cache.ttlSeconds * 1000, maxAgeMs, share: shareable }, fetchFresh),
      );
      if (leader && value.fetched) return { answer: value.answer, how: "miss" };
      if (!value.fetched) cache.set(cacheKey, { ...value.answer });
      // Published by another instance before this request came: that is a (fleet-wide) cache hit.
      const how = !value.fetched && value.answer.storedAt < started ? "hit" : "coalesced";
      f.saved = value.answer.paid; // [metrics: USD saved]
      return { answer: { ...value.answer, paid: 0n }, how };
    };

    const idemKey = c.req.header("idempotency-key");
    let answer: Answer;
    let how: string;
    if (idemKey) {
      let produced: { how: string } = { how: "miss" };
      const r = await withIdempotency(services, tenant.id, idemKey, fingerprint, async () => {
        const p = await produce();
        produced = p;
        return p.answer;
      });
      answer = r.answer;
      how = r.replayed ? "idempotent-replay" : produced.how;
    } else {
      ({ answer, how } = await produce());
    }

    f.paid = answer.paid;
    f.cache = how;
    return answerResponse(answer, {
      "x-tollgate-cache": how,
      "x-tollgate-paid": atomicToUsd(answer.paid),
      "x-tollgate-budget-remaining": await budgetRemaining(services, tenant),
      "cache-control": "private, no-store",
    });
  };

  app.post("/x402/web/search", searchLike);
  app.post("/x402/web/fetch", searchLike);
  app.post("/api/web/search", searchLike);
  app.post("/api/web/fetch", searchLike);
  app.route("/", x402SessionRoutes(services, signer));
  return app;
}

function isCompletedJob(a: Answer): boolean {
  try {
    const j = JSON.parse(new TextDecoder().decode(a.body));
    return j?.status === undefined || j.status === "completed";
  } catch {
    return false;
  }
}

/** Hash of a request's canonical body (key order and maxAgeSeconds do not matter), remembered for repeated bodies. */
class RequestFingerprints {
  private readonly seen = new LRUCache<string, string>({ max: 4096, maxSize: 4 * 1024 * 1024, sizeCalculation: (_v, k) => k.length + 64 });

  async of(route: string, text: string, keyed: Record<string, unknown>): Promise<string> {
    const k = `${route}\n${text}`;
    let fp = this.seen.get(k);
    if (!fp) {
      fp = await sha256Hex(`${route}\n${canonicalJson(keyed)}`);
      this.seen.set(k, fp);
    }
    return fp;
  }
}

