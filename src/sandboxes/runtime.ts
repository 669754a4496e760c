// Runtime plane at /sandbox/<id>/…: the route table's runtime rows. The chain has checked the gateway token (bound
// sandbox, scope); these handlers inject the upstream runtime token and stream bodies, SSE and WebSockets through, and
// serve presigned file URLs by ticket without auth.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { clientHeaders, forwardableRequestHeaders } from "../web/transport.js";
import { Upstream, upstreamJson } from "../upstream/upstream.js";
import { isWebSocketUpgrade } from "../web/websocket.js";
import { sandboxCustody, type RuntimeCredential } from "./custody.js";
import { presignTarget, rewritePresign } from "./presign.js";
import { publicOriginOf } from "../web/public-origin.js";
import { RuntimeForwarder, clientBody, sendUpstream } from "./runtime-forward.js";
import { splitRequestUrl } from "../web/request-url.js";
import type { Handlers } from "../routing/handlers.js";
import { whileParentsStand } from "../identity/lineage.js";
import { withSecretEnv } from "./secret-env.js";

/** Splits `/sandbox/<id><rest>?q` (normalised) into what the upstream gets after its own runtime base URL. */
function runtimeRest(c: Context<GatewayEnv>, dropQuery: string[] = []): string {
  const { path, query } = splitRequestUrl(c.req.url);
  const idEnd = path.indexOf("/", "/sandbox/".length);
  let qs = query.slice(1);
  if (dropQuery.length > 0 && qs) {
    const params = new URLSearchParams(qs);
    for (const q of dropQuery) params.delete(q);
    qs = params.toString();
  }
  return (idEnd < 0 ? "/" : path.slice(idEnd)) + (qs ? `?${qs}` : "");
}

export function runtimeHandlers(services: GatewayServices): Handlers {
  const custody = sandboxCustody(services);
  const forwarder = new RuntimeForwarder(services, custody);

  return {
    // Not async: the hot path's answer is the forwarder's promise itself (no frame of its own).
    "runtime.forward": (c) => {
      const id = c.req.param("id")!;
      return forwarder.forward(c, {
        sandboxId: id,
        method: c.req.method,
        rest: runtimeRest(c, ["token"]),
        headers: clientHeaders(c.req.raw.headers),
      });
    },

    // An exec, a process or a terminal: its env gets the tenant's secret placeholders and TOLLGATE_EGRESS (./secret-env.ts).
    "runtime.secretEnv": async (c) => {
      const id = c.req.param("id")!;
      const call = { sandboxId: id, method: c.req.method, rest: runtimeRest(c, ["token"]), headers: clientHeaders(c.req.raw.headers) };
      return forwarder.forwardBytes(c, call, await withSecretEnv(services, c, id));
    },

    // Presigned file URLs point at the gateway (a ticket it can revoke), never at the upstream's runtime host.
    "runtime.presign": async (c) => {
      const id = c.req.param("id")!;
      const res = await forwarder.forward(
        c,
        {
          sandboxId: id,
          method: "POST",
          rest: runtimeRest(c, ["token"]),
          headers: clientHeaders(c.req.raw.headers),
        },
        { read: true },
      );
      if (!res.ok) return Upstream.relay(res);
      return jsonResponse(res.status, await rewritePresign(services, publicOriginOf(c, services), id, await upstreamJson(res)));
    },

    // Browsers cannot set headers on a WebSocket: `?token=` is accepted there (and never forwarded).
    "runtime.websocket": async (c) => {
      if (!isWebSocketUpgrade(c.req.raw))
        throw new GatewayError(426, "upgrade_required", "This is a WebSocket endpoint; connect with a WebSocket client.");
      const id = c.req.param("id")!;
      const caller = c.get("caller");
      const rest = runtimeRest(c, ["token"]);
      // The connection ends when its token is revoked (or, for a keyless token, expires) while it is open.
      const stillValid =
        caller.via === "token" ? whileParentsStand(services, caller.presented, caller.token) : () => services.tokens.stillValid(undefined);
      const relay = (cred: RuntimeCredential) =>
        services.webSocketRelay(c, {
          url: forwarder.target(cred, rest).replace(/^http/, "ws"),
          headers: { authorization: `Bearer ${cred.token}` },
          stillValid,
        });
      // As on HTTP (RuntimeForwarder): a kept token the upstream refuses is renewed and the handshake made once more.
      const res = await relay(await custody.current(c, id));
      if (res.status !== 401) return res;
      await res.body?.cancel().catch(() => {});
      return relay(await custody.renew(c, id));
    },

    // The ticket is the credential, as the upstream's token is on its own presigned URLs.
    "runtime.presigned": async (c) => {
      const id = c.req.param("id")!;
      const rec = await presignTarget(services, id, c.req.query("ticket") ?? undefined);
      if (!rec) throw new GatewayError(401, "unauthorized", "This file URL is invalid or has expired; ask for a new one.");
      if (!services.upstream.isAllowedUrl(rec.url)) {
        const host = /^[a-z]+:\/\/([^/?#]*)/i.exec(rec.url)?.[1] ?? "(not a URL)";
        services.logger.error("sandbox.file.refused", { host, reason: `file host ${host} not in upstream.allowedHosts` });
        throw new GatewayError(
          502,
          "upstream_url_refused",
          `The file URL points at a host the gateway is not configured to follow (upstream.allowedHosts; the gateway's log names the host).`,
        );
      }
      const { body } = await clientBody(c, services.platform);
      const headers = forwardableRequestHeaders(c.req.raw.headers);
      headers.set("x-request-id", c.get("requestId"));
      return sendUpstream(c, services, { url: rec.url, method: c.req.method, headers, body });
    },
  };
}
