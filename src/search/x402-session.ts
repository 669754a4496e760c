// Paid browser sessions (/x402/session): the gateway pays, keeps the managementToken and the upstream CDP endpoint,
// and hands the tenant gateway URLs and a gateway session token instead.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { forwardableRequestHeaders } from "../web/transport.js";
import { Upstream, pathAndQuery } from "../upstream/upstream.js";
import { jsonBody } from "../routing/json-body.js";
import { canonicalJson, sha256Hex } from "./answer.js";
import { payX402 } from "../payments/index.js";
import { rewriteSessionDetail, sessionEndpointsOf } from "../sessions/rewrite.js";
import { readWire, WireRecord } from "../upstream/records.js";
import { X402SessionAnswer } from "../sessions/wire.js";
import { claimCreated, noteCreated } from "../routing/created.js";
import { mintLiveTicket, mintSessionToken, notFoundSession, saveSessionEndpoints } from "../sessions/access.js";
import { publicOriginOf } from "../web/public-origin.js";
import { callerTenant } from "../identity/caller.js";
import { lineageOf } from "../identity/lineage.js";
import type { Handlers } from "../routing/handlers.js";
import type { RouteRow } from "../routing/table.js";
import { stateKeys } from "../state/keys.js";

const MGMT_TTL_MS = 24 * 3600_000;
/** Upstream fields that are credentials for the upstream itself. */
const HIDDEN = ["managementToken", "managementTokenExpiresAt"];

export function x402SessionHandlers(services: GatewayServices): Handlers {
  const { upstream, stores } = services;

  const create = async (c: Context<GatewayEnv>, row: RouteRow) => {
    const tenant = callerTenant(c);
    if (tenant.paysForItself) {
      // Self-paying tenants talk to the upstream directly through the gateway, credentials and all.
      const h = forwardableRequestHeaders(c.req.raw.headers);
      for (const n of ["payment-signature", "x-payment"]) if (c.req.header(n)) h.set(n, c.req.header(n)!);
      return Upstream.relay(
        await upstream.call(c, {
          method: "POST",
          path: pathAndQuery(c),
          headers: h,
          body: (await jsonBody(c, services.platform)).text,
          withApiKey: false,
        }),
      );
    }
    const body = await jsonBody(c, services.platform);
    const text = body.text.trim() ? body.text : "{}";
    const json = body.json;
    // Sessions are never shared: each request is its own purchase (use Idempotency-Key on /x402/web/* for retries).
    const fingerprint = await sha256Hex(`${row.path}\n${canonicalJson(json)}\n${crypto.randomUUID()}`);
    const headers = forwardableRequestHeaders(c.req.raw.headers, ["idempotency-key", "cache-control"]);
    headers.set("content-type", "application/json");
    const send = (payment?: [string, string]) => {
      const h = new Headers(headers);
      if (payment) h.set(payment[0], payment[1]);
      return upstream.call(c, { method: "POST", path: pathAndQuery(c), headers: h, body: text, withApiKey: false });
    };
    // Paid from the tenant's account's wallet when it is pinned to one that has a wallet (docs/accounts.md#wallets).
    // Entered once: the payment whole, and the figures the answer shows (what it paid, the budget left).
    const result = await payX402({ services, tenant, route: row.name, fingerprint, context: c, send, figures: true });
    c.get("logFields").paid = result.paid;
    const res = result.response;
    if (!res.ok) return Upstream.relay(res);
    const detail = readWire(X402SessionAnswer, await res.json());
    const id = String(detail.id ?? "");
    if (!id) throw new GatewayError(502, "upstream_bad_response", "The upstream sold a session without an id.");
    await claimCreated(services, c, { kind: "session", id, tenant: tenant.id, route: row.name });
    if (typeof detail.managementToken === "string")
      await stores.kv.set(stateKeys.x402SessionManagement(id), detail.managementToken, MGMT_TTL_MS);
    await saveSessionEndpoints(services, id, sessionEndpointsOf(detail));
    const parents = await lineageOf(c.get("caller"));
    const [token, liveTicket] = await Promise.all([
      mintSessionToken(services, tenant.id, id, { parents }),
      mintLiveTicket(services, tenant.id, id, undefined, parents),
    ]);
    const shown: WireRecord = rewriteSessionDetail(detail, {
      publicOrigin: publicOriginOf(c, services),
      sessionToken: token.token,
      liveTicket,
    });
    for (const f of HIDDEN) delete shown[f];
    shown.token = token.token;
    shown.tokenExpiresAt = token.expiresAt;
    noteCreated(c, shown); // [the chain's quota step takes the id and end time from here]
    return c.json(shown, 200, {
      "x-tollgate-paid": result.shown!.paid,
      "x-tollgate-budget-remaining": await result.shown!.remaining,
    });
  };

  // Management calls: the tenant's key stands in for the managementToken the gateway keeps.
  const manage = async (c: Context<GatewayEnv>) => {
    const id = c.req.param("id")!;
    const mgmt = await stores.kv.get(stateKeys.x402SessionManagement(id));
    if (!mgmt) throw notFoundSession(id);
    const h = new Headers({ authorization: `Bearer ${mgmt}` });
    const res = await upstream.call(c, { method: c.req.method, path: pathAndQuery(c), headers: h, withApiKey: false });
    if (!res.ok) return Upstream.relay(res);
    if (c.req.method === "PUT") await stores.ownership.setActive("session", id, false);
    const body = readWire(WireRecord, await res.json());
    for (const f of [...HIDDEN, "wsEndpoint", "computerActionEndpoint", "token", "liveUrl"]) delete body[f];
    return c.json(body);
  };
  return { "x402session.create": create, "x402session.get": manage, "x402session.stop": manage };
}
