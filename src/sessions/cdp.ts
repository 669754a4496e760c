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
import { activeLayers, hasDomainRules, type PolicyLayer } from "../agent-policy/engine.js";
import { cdpGuard } from "./cdp-guard.js";
import type { BrowserSecretLookup } from "./cdp-guard-rules.js";

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
      const tap = await cdpGuardFor(c, services, id, tenantId);
      return services.webSocketRelay(c, { url, headers: {}, stillValid, ...(tap ? { tap } : {}) });
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

/** The policy layers that apply to the caller: the operator's, its tenant's, its token's or grant's. */
function callerLayers(services: GatewayServices, c: Context<GatewayEnv>): PolicyLayer[] {
  const caller = c.get("caller");
  const tenant = caller && "tenant" in caller ? caller.tenant : undefined;
  return activeLayers([
    { by: "operator", policy: services.config.policy ?? {} },
    tenant ? { by: "tenant", policy: tenant.policy ?? {} } : undefined,
    caller?.via === "token" && caller.token.policy ? { by: "token", policy: caller.token.policy } : undefined,
  ]);
}

/**
 * The gateway's guard on a CDP connection (src/sessions/cdp-guard.ts, docs/cdp-guard.md): on when the caller's policy
 * has `domains` rules (the navigation floor) or its tenant has secrets (Tollgate.fillSecret; read when the connection
 * opens); else the relay is a plain pipe.
 */
async function cdpGuardFor(c: Context<GatewayEnv>, services: GatewayServices, sessionId: string, tenantId: string) {
  const layers = callerLayers(services, c).filter((l) => hasDomainRules([l]));
  const names = (await services.vault.store.list(tenantId)).map((r) => r.name);
  const hasSecrets = names.length > 0;
  if (!layers.length && !hasSecrets) return undefined;
  const secrets: BrowserSecretLookup | undefined = hasSecrets
    ? async (name) => {
        const use = await services.vault.valueFor(tenantId, name);
        if (use) services.background(undefined, services.vault.noteUse(tenantId, name), "secret use");
        return use && { value: use.value, hosts: use.hosts };
      }
    : undefined;
  const requestId = c.get("requestId");
  const audit = (action: string, after: Record<string, unknown>) =>
    services.background(
      undefined,
      services.stores.audit.append({ at: services.now(), actor: tenantId, action, target: `session:${sessionId}`, requestId, after }),
      `audit ${action}`,
    );
  return cdpGuard({
    layers,
    ...(secrets
      ? {
          secrets,
          secretValues: async () =>
            (await Promise.all(names.map((n) => services.vault.valueFor(tenantId, n)))).flatMap((u) => (u ? [u.value] : [])),
        }
      : {}),
    events: {
      navigationClosed: ({ targetId, type, origin, refusal }) => {
        services.metrics.refusal("cdp_navigation_denied");
        services.logger.info("cdp target closed by the navigation floor", {
          requestId,
          tenant: tenantId,
          sessionId,
          targetId,
          targetType: type,
          origin,
          policy: refusal.policy,
          by: refusal.by,
          ...(refusal.rule ? { rule: refusal.rule } : {}),
        });
        audit("cdp.navigation.closed", { targetId, targetType: type, origin, host: refusal.host, policy: refusal.policy, by: refusal.by });
      },
      secretFilled: ({ name, origin, targetId }) => {
        services.logger.info("cdp secret filled", { requestId, tenant: tenantId, sessionId, targetId, secretName: name, origin });
        audit("cdp.secret.fill", { secret: name, origin, targetId });
      },
      readRefused: ({ method, targetId }) => {
        services.metrics.refusal("cdp_read_after_fill");
        services.logger.info("cdp read refused after a fill", { requestId, tenant: tenantId, sessionId, targetId, method });
      },
      failed: ({ reason }) => {
        services.metrics.refusal("cdp_guard_failed");
        services.logger.error("cdp guard could not start; connection closed", { requestId, tenant: tenantId, sessionId, reason });
      },
    },
  });
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
