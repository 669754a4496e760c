// Runtime plane at /sandbox/<id>/…: gateway token checked (bound sandbox, scope), upstream runtime token injected,
// bodies, SSE and WebSockets streamed through; presigned file URLs served by ticket without auth.
import { Hono, type Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { bearerToken } from "../tenants.js";
import { requireTokenScope, type GatewayToken } from "../tokens.js";
import { forwardableRequestHeaders } from "../transport.js";
import { Upstream, upstreamJson } from "../upstream.js";
import { isWebSocketUpgrade } from "../websocket.js";
import { sandboxCustody } from "../sandbox/custody.js";
import { presignTarget, rewritePresign } from "../sandbox/presign.js";
import { publicOriginOf } from "../public-origin.js";
import { RuntimeForwarder, clientBody, sendUpstream } from "../sandbox/runtime-forward.js";

const PRESIGN = /^\/files\/presign-(upload|download)$/;

/** Splits `/sandbox/<id><rest>?q` into the id and what the upstream gets after its own base URL. */
function runtimePath(url: URL, dropQuery: string[] = []): { id: string; rest: string } {
  const segs = url.pathname.split("/");
  const rawId = segs[2] ?? "";
  const params = new URLSearchParams(url.search);
  for (const q of dropQuery) params.delete(q);
  const qs = params.toString();
  return { id: decodeURIComponent(rawId), rest: (url.pathname.slice(`/sandbox/${rawId}`.length) || "/") + (qs ? `?${qs}` : "") };
}

export function runtimeRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const custody = sandboxCustody(services);
  const forwarder = new RuntimeForwarder(services, custody);

  /** Verifies the gateway token for this sandbox and scope; another sandbox's token finds nothing (404). */
  const admit = async (c: Context<GatewayEnv>, id: string, rest: string, token: string | undefined): Promise<GatewayToken> => {
    const t = await services.tokens.verify(token);
    if (t.kind !== "sandbox" || t.resource !== id) throw new GatewayError(404, "not_found", `Sandbox ${id} not found`);
    requireTokenScope(t, /^\/pty(\/|$)/.test(rest) ? "terminal" : "runtime", id);
    const tenant = services.directory.get(t.tenant);
    if (!tenant?.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant this token was minted for is disabled.");
    c.set("tenant", tenant);
    c.get("logFields").tenant = tenant.id;
    c.get("logFields").route = "sandbox.runtime";
    return t;
  };

  // Presigned file URLs: the ticket is the credential, as the upstream's token is on its own URLs.
  app.on(["GET", "HEAD", "PUT"], "/sandbox/:id/files/presigned", async (c) => {
    const url = new URL(c.req.url);
    const { id } = runtimePath(url);
    const rec = await presignTarget(services, id, url.searchParams.get("ticket") ?? undefined);
    if (!rec) throw new GatewayError(401, "unauthorized", "This file URL is invalid or has expired; ask for a new one.");
    if (!services.upstream.isAllowedUrl(rec.url)) throw new GatewayError(502, "upstream_url_refused", "The file URL points at a host the gateway is not configured to follow.");
    c.get("logFields").route = "sandbox.presigned";
    const { body } = await clientBody(c);
    const headers = forwardableRequestHeaders(c.req.raw.headers);
    headers.set("x-request-id", c.get("requestId"));
    return Upstream.relay(await sendUpstream(c, services, { url: rec.url, method: c.req.method, headers, body }));
  });

  app.all("/sandbox/:id/*", async (c) => {
    const url = new URL(c.req.url);
    if (isWebSocketUpgrade(c.req.raw)) {
      // Browsers cannot set headers on a WebSocket: `?token=` is accepted there (and never forwarded).
      const { id, rest } = runtimePath(url, ["token"]);
      const presented = bearerToken(c.req.raw.headers) ?? url.searchParams.get("token") ?? undefined;
      await admit(c, id, rest, presented);
      const cred = await custody.current(c, id);
      const target = forwarder.target(cred, rest).replace(/^http/, "ws");
      // The connection ends when its token is revoked (or, for a keyless token, expires) while it is open.
      const stillValid = () => services.tokens.stillValid(presented);
      return services.webSocketRelay(c, { url: target, headers: { authorization: `Bearer ${cred.token}` }, stillValid });
    }
    const { id, rest } = runtimePath(url);
    await admit(c, id, rest, bearerToken(c.req.raw.headers));
    const res = await forwarder.forward(c, { sandboxId: id, method: c.req.method, rest, headers: forwardableRequestHeaders(c.req.raw.headers) });
    if (res.ok && c.req.method === "POST" && PRESIGN.test(rest.split("?")[0]!)) {
      const body = await rewritePresign(services, publicOriginOf(c, services), id, await upstreamJson(res));
      return jsonResponse(res.status, body);
    }
    return Upstream.relay(res);
  });

  return app;
}
