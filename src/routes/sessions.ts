// Sessions control plane: /api/session(s) forwarded with the upstream key, owned per tenant, URLs moved to the gateway.
import { Hono, type Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../tenants.js";
import { authenticateTenant } from "../../middleware/authenticate/index.js";
import { Upstream, pathAndQuery, upstreamJson } from "../upstream.js";
import { rewriteSessionDetail, rewriteSessionSummary, sessionEndpointsOf } from "../rewrite/session.js";
import { mintSessionToken, notFoundSession, requireSessionOwner, saveSessionEndpoints } from "./session-access.js";
import { publicOriginOf } from "../public-origin.js";

/** Upstream list pages read to build one tenant's list (100 sessions each). */
const MAX_LIST_PAGES = 50;

const tenantOf = (c: Context<GatewayEnv>, services: GatewayServices): Promise<Tenant> => authenticateTenant(c, services.directory, "sessions");

function positiveInt(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new GatewayError(400, "invalid_params", `${name} must be an integer from 1 to ${max}`);
  return n;
}

export function sessionRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const { upstream, stores } = services;

  /** Shows a detail on the gateway: records its endpoints and status, mints the gateway token that replaces the upstream's. */
  async function presentDetail(c: Context<GatewayEnv>, tenant: Tenant, detail: Record<string, any>) {
    const id = String(detail.id);
    await saveSessionEndpoints(services, id, sessionEndpointsOf(detail));
    if (typeof detail.status === "string") await stores.ownership.setActive("session", id, detail.status === "active");
    const token = await mintSessionToken(services, tenant.id, id);
    return rewriteSessionDetail(detail, { publicOrigin: publicOriginOf(c, services), sessionToken: token.token });
  }

  /** Upstream error answers pass through as they are (status, `{message, code}`, request id). */
  const passError = (res: Response) => Upstream.relay(res);

  app.post("/api/session", async (c) => {
    const tenant = await tenantOf(c, services);
    const res = await upstream.call(c, { method: "POST", path: pathAndQuery(c), headers: c.req.raw.headers, body: c.req.raw.body });
    if (!res.ok) return passError(res);
    const detail = await upstreamJson(res);
    if (!detail?.id) throw new GatewayError(502, "upstream_bad_response", "The upstream created a session without an id.");
    await stores.ownership.claim("session", String(detail.id), tenant.id);
    return c.json(await presentDetail(c, tenant, detail));
  });

  app.get("/api/sessions/active-count", async (c) => {
    const tenant = await tenantOf(c, services);
    return c.json({ activeSessionsCount: await stores.ownership.activeCount("session", tenant.id) });
  });

  // The upstream lists the whole team; the gateway reads it page by page and keeps the tenant's own sessions.
  app.get("/api/sessions", async (c) => {
    const tenant = await tenantOf(c, services);
    const page = positiveInt(c.req.query("page"), "page", 1, 1_000_000);
    const perPage = positiveInt(c.req.query("limit"), "limit", 10, 100);
    const owned = new Set(await stores.ownership.list("session", tenant.id));
    const statuses = c.req.queries("status") ?? [];
    const mine: Record<string, any>[] = [];
    for (let p = 1; owned.size > 0 && p <= MAX_LIST_PAGES; p++) {
      const q = new URLSearchParams([...statuses.map((s) => ["status", s]), ["page", String(p)], ["limit", "100"]]);
      const res = await upstream.call(c, { method: "GET", path: `/api/sessions?${q}` });
      if (!res.ok) return passError(res);
      const body = await upstreamJson(res);
      const batch: Record<string, any>[] = Array.isArray(body.sessions) ? body.sessions : [];
      for (const s of batch) {
        if (!owned.has(String(s.id))) continue;
        mine.push(rewriteSessionSummary(s, publicOriginOf(c, services)));
        if (typeof s.status === "string" && s.status !== "active") await stores.ownership.setActive("session", String(s.id), false);
      }
      const total = Number(body.totalCount ?? 0);
      if (batch.length === 0 || p * Number(body.perPage ?? 100) >= total) break;
    }
    return c.json({ sessions: mine.slice((page - 1) * perPage, page * perPage), totalCount: mine.length, page, perPage });
  });

  app.get("/api/session/:id", async (c) => {
    const tenant = await tenantOf(c, services);
    const id = c.req.param("id");
    await requireSessionOwner(services, tenant.id, id);
    const res = await upstream.call(c, { method: "GET", path: pathAndQuery(c) });
    if (res.status === 404) throw notFoundSession(id);
    if (!res.ok) return passError(res);
    return c.json(await presentDetail(c, tenant, await upstreamJson(res)));
  });

  app.put("/api/session/:id/stop", async (c) => {
    const tenant = await tenantOf(c, services);
    const id = c.req.param("id");
    await requireSessionOwner(services, tenant.id, id);
    const res = await upstream.call(c, { method: "PUT", path: pathAndQuery(c), headers: c.req.raw.headers });
    if (res.ok || res.status === 404) await stores.ownership.setActive("session", id, false);
    if (res.status === 404) throw notFoundSession(id);
    return Upstream.relay(res);
  });

  // The computer-action endpoint is the gateway's own (see cdp.ts); the upstream one is never reached directly.
  app.all("/api/session/:id/computer-action", (c) =>
    jsonResponse(404, { message: "Use the session's computerActionEndpoint.", code: "not_found" }),
  );

  // Every other per-session call (snapshot, recordings, uploads, extend, update...) passes through for the owner.
  app.all("/api/session/:id/*", async (c) => {
    const tenant = await tenantOf(c, services);
    await requireSessionOwner(services, tenant.id, c.req.param("id"));
    const res = await upstream.call(c, { method: c.req.method, path: pathAndQuery(c), headers: c.req.raw.headers, body: c.req.raw.body });
    return Upstream.relay(res);
  });

  return app;
}
