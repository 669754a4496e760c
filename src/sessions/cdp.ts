// Browser traffic of a session through the gateway: the CDP WebSocket relay and the computer-action endpoint.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, errors } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { Upstream } from "../upstream/upstream.js";
import { isWebSocketUpgrade } from "../web/websocket.js";
import { sessionEndpoints } from "./access.js";
import { callerTenant } from "../identity/caller.js";
import { whileCallerStands } from "../identity/lineage.js";
import { jsonBody } from "../routing/json-body.js";
import type { Handlers } from "../routing/handlers.js";

/** The upstream URL, once checked against the hosts the gateway may follow. */
export function allowedUpstreamUrl(services: GatewayServices, url: string | undefined, what: string, id: string): string {
  if (!url) throw new GatewayError(409, "session_endpoint_unavailable", `Session ${id} has no ${what} upstream (is it still active?).`);
  if (!services.upstream.isAllowedUrl(url)) {
    services.logger.error("session endpoint outside upstream.allowedHosts", { sessionId: id, what, host: new URL(url).host });
    throw new GatewayError(
      502,
      "upstream_host_not_allowed",
      `The upstream's ${what} for this session is on a host the gateway is not configured to follow (upstream.allowedHosts).`,
    );
  }
  return url;
}

export function cdpHandlers(services: GatewayServices): Handlers {
  return {
    // wsEndpoint: ws(s)://<gateway>/devtools/browser/<id>?token=… → the upstream wsEndpoint, kept server-side.
    "cdp.connect": async (c) => {
      const id = c.req.param("id")!;
      const caller = c.get("caller");
      if (!isWebSocketUpgrade(c.req.raw)) {
        throw new GatewayError(
          426,
          "upgrade_required",
          "This is a CDP WebSocket endpoint; connect with puppeteer.connect({browserWSEndpoint}) or chromium.connectOverCDP().",
        );
      }
      const url = allowedUpstreamUrl(services, (await sessionEndpoints(c, services, id)).wsEndpoint, "wsEndpoint", id);
      const tenantId = callerTenant(c).id;
      // A token revoked (or a keyless one expiring, or its key, grant or tenant gone) while the connection is open ends
      // it; a tenant key is checked on ownership and on the key itself (revoked or expired, its tenant disabled).
      const stands = caller.via === "token" || caller.via === "key" ? whileCallerStands(services, caller) : async () => true;
      const stillValid =
        caller.via === "token"
          ? stands
          : async () => (await services.stores.ownership.owner("session", id)) === tenantId && (await stands());
      return services.webSocketRelay(c, { url, headers: {}, stillValid });
    },

    // computerActionEndpoint: the SDK posts here verbatim with x-api-key; keyless clients use a session token.
    "cdp.computerAction": async (c) => {
      const id = c.req.param("id")!;
      // The chain has read and checked the body against the row's declaration (one of the SDK's actions).
      const body = (await jsonBody(c, services.platform)).text;
      const url = allowedUpstreamUrl(
        services,
        (await sessionEndpoints(c, services, id)).computerActionEndpoint,
        "computerActionEndpoint",
        id,
      );
      return Upstream.relay(await postAbsolute(c, services, url, body));
    },
  };
}

/** POSTs to an absolute upstream URL with the API key (computer actions live outside `/api`). */
async function postAbsolute(c: Context<GatewayEnv>, services: GatewayServices, url: string, body: string): Promise<Response> {
  // The session's account (its detail was just read through it), with several upstream accounts.
  const headers = services.upstream.controlHeaders(c.get("requestId"), undefined, c.get("upstreamAccount"));
  headers.set("content-type", "application/json");
  // Screenshots and held keys can take a while; the configured upstream timeout bounds the wait for headers.
  const signal = AbortSignal.timeout(services.config.upstream.timeoutMs);
  try {
    return await services.upstream.transport.request({ url, method: "POST", headers, body, signal });
  } catch {
    throw signal.aborted ? errors.upstreamTimeout() : errors.upstreamUnavailable();
  }
}
