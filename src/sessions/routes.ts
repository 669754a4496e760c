// Sessions control plane (/api/session*, /api/sessions): the route table's rows for them. Ownership and scope are the
// chain's; these handlers claim what is created, settle metered time when a session ends, and move URLs to the gateway.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
const FILE_FIELDS: Record<string, string> = {
  "session.recordingUrl": "recordingUrl",
  "session.videoRecordingUrl": "recordingUrl",
  "session.downloadsUrl": "downloadsUrl",
};
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import { Upstream, pathAndQuery, upstreamJson } from "../upstream/upstream.js";
import { rewriteSessionDetail, rewriteSessionSummary, sessionEndpointsOf } from "./rewrite.js";
import { mintLiveTicket, mintSessionToken, notFoundSession, saveSessionEndpoints } from "./access.js";
import { publicOriginOf } from "../web/public-origin.js";
import { callerTenant } from "../identity/caller.js";
import { lineageOf } from "../identity/lineage.js";
import { settleResource } from "../payments/index.js";
import { ownedPage } from "../sandboxes/owned-list.js";
import { forwardBody, forwardUpstream, type Handlers } from "../routing/handlers.js";
import { claimCreated, noteCreated } from "../routing/created.js";
import { presignTarget, rewriteSessionFileUrl } from "../sandboxes/presign.js";
import { sendUpstream } from "../sandboxes/runtime-forward.js";
import { forwardableRequestHeaders } from "../web/transport.js";
import { jsonResponse } from "../errors.js";
import { SessionDetail } from "./wire.js";
import { stateKeys } from "../state/keys.js";

/** As long as a session's endpoints are kept (session-access.ts): no session outlives a day. */
const VIEW_ONLY_TTL_MS = 24 * 3600_000;

/** Whether the session was created with `viewOnlyLiveView` (the upstream's launchState, else the creation body). */
function viewOnlyAsked(c: Context<GatewayEnv>, detail: SessionDetail): boolean {
  if (detail.launchState?.viewOnlyLiveView !== undefined) return detail.launchState.viewOnlyLiveView === true;
  return c.get("jsonBody")?.json.viewOnlyLiveView === true; // read by the chain's quota and meter steps
}

/**
 * How long the live view link may be opened: the SDKs' `liveViewTtlSeconds` (query on get, body on create), at most
 * `tokens.ttlSeconds`. A view already open outlives it, as a CDP connection outlives its token; revocation ends both.
 */
function liveViewTtl(c: Context<GatewayEnv>, max: number): number {
  const asked = Number(c.req.query("liveViewTtlSeconds") ?? c.get("jsonBody")?.json.liveViewTtlSeconds);
  return Number.isInteger(asked) && asked > 0 ? Math.min(asked, max) : max;
}

function positiveInt(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new GatewayError(400, "invalid_params", `${name} must be an integer from 1 to ${max}`);
  return n;
}

export function sessionHandlers(services: GatewayServices): Handlers {
  const { upstream, stores } = services;

  /** Shows a detail on the gateway: records its endpoints and status, mints the gateway token that replaces the upstream's. */
  async function presentDetail(c: Context<GatewayEnv>, tenant: Tenant, detail: SessionDetail, created = false) {
    const id = String(detail.id);
    // A creation saved its endpoints beside its claim, which made it active.
    if (!created) await saveSessionEndpoints(services, id, sessionEndpointsOf(detail));
    if (typeof detail.status === "string" && !(created && detail.status === "active")) {
      await stores.ownership.setActive("session", id, detail.status === "active");
      if (detail.status !== "active") await settleResource(services, "session", id, c);
    }
    const parents = await lineageOf(c.get("caller"));
    const [token, liveTicket] = await Promise.all([
      mintSessionToken(services, tenant.id, id, { parents }),
      mintLiveTicket(services, tenant.id, id, liveViewTtl(c, services.config.tokens.ttlSeconds), parents),
    ]);
    return rewriteSessionDetail(detail, { publicOrigin: publicOriginOf(c, services), sessionToken: token.token, liveTicket });
  }

  /** Upstream error answers pass through as they are (status, `{message, code}`, request id). */
  const passError = (res: Response) => Upstream.relay(res);

  return {
    "session.create": async (c, row) => {
      const tenant = callerTenant(c);
      const { headers, body } = forwardBody(c);
      const res = await upstream.call(c, { method: "POST", path: pathAndQuery(c), headers, body });
      if (!res.ok) return passError(res);
      const detail = await upstreamJson(res, SessionDetail);
      if (!detail.id) throw new GatewayError(502, "upstream_bad_response", "The upstream created a session without an id.");
      const id = String(detail.id);
      // Its endpoints and view-only mark beside the claim (one state round trip): the CDP relay and the live view
      // serve only the owner's tokens, and the endpoints are the upstream's own for that id.
      await Promise.all([
        claimCreated(services, c, { kind: "session", id, tenant: tenant.id, route: row.name }),
        saveSessionEndpoints(services, id, sessionEndpointsOf(detail)),
        viewOnlyAsked(c, detail) ? stores.kv.set(stateKeys.sessionViewOnly(id), "1", VIEW_ONLY_TTL_MS) : undefined,
      ]);
      const shown = await presentDetail(c, tenant, detail, true);
      noteCreated(c, shown); // [the chain's quota and meter steps take the created id from here]
      return c.json(shown);
    },

    // A session snapshot is a resource of its own that later sessions start from: it is the snapshotting tenant's.
    "session.snapshot": async (c, row) => {
      const res = await forwardUpstream(c, services);
      if (!res.ok) return Upstream.relay(res);
      const taken = (await upstreamJson(res.clone())) as { snapshotId?: unknown };
      if (typeof taken.snapshotId !== "string" || !taken.snapshotId)
        throw new GatewayError(502, "upstream_bad_response", "The upstream took a snapshot but did not say its id.");
      await claimCreated(services, c, { kind: "snapshot", id: taken.snapshotId, tenant: callerTenant(c).id, route: row.name });
      return Upstream.relay(res);
    },

    "session.fileUrl": async (c, row) => {
      const res = await forwardUpstream(c, services);
      if (!res.ok) return Upstream.relay(res);
      const body = await upstreamJson(res);
      return jsonResponse(
        res.status,
        await rewriteSessionFileUrl(services, publicOriginOf(c, services), c.req.param("id")!, body, FILE_FIELDS[row.name]!),
      );
    },

    // The ticket is the credential, as the upstream's signature is on its own link.
    "session.file": async (c) => {
      const rec = await presignTarget(services, `session:${c.req.param("id")}`, c.req.query("ticket") ?? undefined);
      if (!rec) throw new GatewayError(401, "unauthorized", "This file link is invalid or has expired; ask for a new one.");
      const headers = forwardableRequestHeaders(c.req.raw.headers);
      headers.set("x-request-id", c.get("requestId"));
      return Upstream.relay(await sendUpstream(c, services, { url: rec.url, method: c.req.method, headers, body: null }));
    },

    "session.activeCount": async (c) => c.json({ activeSessionsCount: await stores.ownership.activeCount("session", callerTenant(c).id) }),

    // The upstream lists the whole team; the gateway reads it page by page and keeps the tenant's own sessions.
    // A page of the tenant's own sessions, from its records and the page's details (src/sandboxes/owned-list.ts): its
    // cost grows with the page, not with the account. Each entry is a summary: what a detail adds is not listed.
    "session.list": async (c) => {
      const tenant = callerTenant(c);
      // Refused rather than clamped, as before: a page or limit that is not a whole number in range is a 400.
      positiveInt(c.req.query("page"), "page", 1, 1_000_000);
      positiveInt(c.req.query("limit"), "limit", 10, 100);
      const page = await ownedPage(c, services, tenant, { path: "/api/sessions", field: "sessions", kind: "session", defaultLimit: 10 });
      if ("passthrough" in page) return page.passthrough;
      const sessions = [];
      for (const s of page.items) {
        const { wsEndpoint: _ws, computerActionEndpoint: _ca, token: _t, ...summary } = s as Record<string, unknown>;
        sessions.push(rewriteSessionSummary(summary, publicOriginOf(c, services)));
        if (typeof s.status === "string" && s.status !== "active") await settleResource(services, "session", String(s.id), c);
      }
      return c.json({ sessions, totalCount: page.totalCount, page: page.page, perPage: page.perPage });
    },

    "session.get": async (c) => {
      const id = c.req.param("id")!;
      const res = await upstream.call(c, { method: "GET", path: pathAndQuery(c) });
      if (res.status === 404) throw notFoundSession(id);
      if (!res.ok) return passError(res);
      return c.json(await presentDetail(c, callerTenant(c), await upstreamJson(res, SessionDetail)));
    },

    "session.stop": async (c) => {
      const id = c.req.param("id")!;
      const res = await upstream.call(c, { method: "PUT", path: pathAndQuery(c), headers: c.req.raw.headers });
      if (res.ok || res.status === 404) {
        await stores.ownership.setActive("session", id, false);
        await settleResource(services, "session", id, c);
      }
      if (res.status === 404) throw notFoundSession(id);
      return Upstream.relay(res);
    },
  };
}
