// Sandbox control plane (/api/sandbox*, /api/sandboxes, /api/images, /api/snapshots): tenant key in, API key upstream,
// ownership enforced, and every runtime/port URL and runtime token in the answer replaced by the gateway's own.
import { Hono, type Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { requireScope, type Tenant } from "../tenants.js";
import { authenticate } from "../../middleware/authenticate/index.js";
import { Upstream, pathAndQuery, upstreamJson } from "../upstream.js";
import { rewriteExposure, rewriteSandboxDetail } from "../rewrite/sandbox.js";
import { sandboxCustody } from "../sandbox/custody.js";
import { ownedPage } from "../sandbox/owned-list.js";
import { rememberPublicHost } from "../sandbox/public-origin.js";
import { claimSnapshot, pinSnapshotSource, resolveOwnedSnapshot } from "../sandbox/snapshots.js";
import { requireOwnedSandbox, tenantRewriteContext } from "../sandbox/tenant-view.js";

const MAX_BODY = 1024 * 1024;
const JSON_HEADERS = () => new Headers({ "content-type": "application/json" });

async function readJsonObject(c: Context<GatewayEnv>): Promise<Record<string, any>> {
  const text = await c.req.text();
  if (text.length > MAX_BODY) throw new GatewayError(413, "body_too_large", `Request bodies are limited to ${MAX_BODY} bytes.`);
  if (!text.trim()) return {};
  try {
    const v = JSON.parse(text);
    if (v && typeof v === "object" && !Array.isArray(v)) return v;
  } catch {
    /* fall through */
  }
  throw new GatewayError(400, "invalid_request", "Request body must be a JSON object");
}

/** Answers with the upstream's status and a JSON body (rewritten by the caller), keeping x-request-id. */
function answer(res: Response, body: unknown): Response {
  const headers: Record<string, string> = {};
  const rid = res.headers.get("x-request-id");
  if (rid) headers["x-request-id"] = rid;
  return jsonResponse(res.status, body, headers);
}

export function sandboxRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const { upstream } = services;
  const custody = sandboxCustody(services);
  const auth = authenticate(services.directory, "sandboxes");
  for (const p of ["/api/sandbox", "/api/sandbox/*", "/api/sandboxes", "/api/images", "/api/images/*", "/api/snapshots", "/api/snapshots/*"]) app.use(p, auth);

  const tenantOf = (c: Context<GatewayEnv>): Tenant => c.get("tenant")!;

  /** Rewrites one upstream sandbox for the tenant, keeping the upstream runtime credential server-side. */
  const present = async (c: Context<GatewayEnv>, detail: Record<string, any>) => {
    const ctx = tenantRewriteContext(c, services, tenantOf(c));
    await rememberPublicHost(services, String(detail.id), ctx.publicOrigin);
    if ("token" in detail) await custody.keep(detail);
    else if (["closed", "close-error", "error"].includes(detail.status)) await services.stores.ownership.setActive("sandbox", String(detail.id), false);
    return rewriteSandboxDetail(detail, ctx);
  };

  const forward = (c: Context<GatewayEnv>, method: string, path: string, body?: string) =>
    upstream.call(c, { method, path, headers: body === undefined ? undefined : JSON_HEADERS(), body });

  app.post("/api/sandbox", async (c) => {
    const tenant = tenantOf(c);
    const body = await readJsonObject(c);
    await pinSnapshotSource(services, tenant, body);
    const res = await forward(c, "POST", "/api/sandbox", JSON.stringify(body));
    if (!res.ok) return Upstream.relay(res);
    const detail = await upstreamJson(res);
    if (!detail?.id) throw new GatewayError(502, "upstream_bad_response", "The upstream created a sandbox but did not say its id.");
    await services.stores.ownership.claim("sandbox", String(detail.id), tenant.id);
    services.logger.info("sandbox.created", { tenant: tenant.id, sandbox: detail.id });
    return answer(res, await present(c, detail));
  });

  app.get("/api/sandboxes", async (c) => {
    const page = await ownedPage(c, services, tenantOf(c), { path: "/api/sandboxes", field: "sandboxes", kind: "sandbox" });
    if ("passthrough" in page) return page.passthrough;
    const sandboxes = await Promise.all(page.items.map((s) => present(c, s)));
    return c.json({ sandboxes, totalCount: page.totalCount, page: page.page, perPage: page.perPage });
  });

  app.get("/api/sandbox/:id", async (c) => {
    const id = c.req.param("id");
    await requireOwnedSandbox(services, tenantOf(c), id);
    const res = await forward(c, "GET", pathAndQuery(c));
    if (!res.ok) return Upstream.relay(res);
    return answer(res, await present(c, await upstreamJson(res)));
  });

  app.put("/api/sandbox/:id/stop", async (c) => {
    const id = c.req.param("id");
    await requireOwnedSandbox(services, tenantOf(c), id);
    const res = await upstream.call(c, { method: "PUT", path: pathAndQuery(c), headers: c.req.raw.headers, body: null });
    if (res.ok) {
      await services.stores.ownership.setActive("sandbox", id, false);
      await custody.forget(id);
    }
    return Upstream.relay(res);
  });

  app.post("/api/sandbox/:id/snapshot", async (c) => {
    const tenant = tenantOf(c);
    await requireOwnedSandbox(services, tenant, c.req.param("id"));
    const res = await forward(c, "POST", pathAndQuery(c), JSON.stringify(await readJsonObject(c)));
    if (!res.ok) return Upstream.relay(res);
    const snap = await upstreamJson(res);
    if (snap?.snapshotId) await claimSnapshot(services, tenant, String(snap.snapshotId), snap.snapshotName);
    return answer(res, snap);
  });

  app.post("/api/sandbox/:id/expose", async (c) => {
    const tenant = tenantOf(c);
    const id = c.req.param("id");
    await requireOwnedSandbox(services, tenant, id);
    const res = await forward(c, "POST", pathAndQuery(c), JSON.stringify(await readJsonObject(c)));
    if (!res.ok) return Upstream.relay(res);
    const ctx = tenantRewriteContext(c, services, tenant);
    await rememberPublicHost(services, id, ctx.publicOrigin);
    return answer(res, await rewriteExposure(await upstreamJson(res), id, ctx));
  });

  // Everything else under one sandbox (unexpose, network, future endpoints): owner only, forwarded as it is.
  app.all("/api/sandbox/:id/*", async (c) => {
    await requireOwnedSandbox(services, tenantOf(c), c.req.param("id"));
    return Upstream.relay(await upstream.call(c, { method: c.req.method, path: pathAndQuery(c), headers: c.req.raw.headers, body: c.req.raw.body }));
  });

  // Images are the operator's shared catalog: every tenant may read it; changing it needs the admin scope.
  for (const p of ["/api/images", "/api/images/*"]) {
    app.all(p, async (c, next) => {
      if (c.req.method !== "GET" && c.req.method !== "HEAD") requireScope(tenantOf(c), "admin");
      await next();
    });
  }

  app.get("/api/snapshots", async (c) => {
    const page = await ownedPage(c, services, tenantOf(c), { path: "/api/snapshots", field: "snapshots", kind: "snapshot" });
    if ("passthrough" in page) return page.passthrough;
    return c.json({ snapshots: page.items, totalCount: page.totalCount, page: page.page, perPage: page.perPage });
  });

  app.on(["GET", "DELETE"], "/api/snapshots/:idOrName", async (c) => {
    const id = await resolveOwnedSnapshot(services, tenantOf(c), c.req.param("idOrName"));
    const res = await upstream.call(c, { method: c.req.method, path: `/api/snapshots/${encodeURIComponent(id)}`, headers: c.req.raw.headers, body: null });
    return Upstream.relay(res);
  });

  return app;
}
