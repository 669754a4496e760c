// Exposed ports by Host `<port>-<id>.<gateway host>`: HTTP and WebSocket relayed to the upstream's port host; auth:true
// ports admitted with the gateway token (Bearer) or the cookie its browserUrl bootstrap sets, then the upstream bearer.
import type { Context, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { PORT_COOKIE, portGrant, portVisitor } from "../identity/resources.js";
import { forwardableRequestHeaders } from "../web/transport.js";
import { isWebSocketUpgrade } from "../web/websocket.js";
import { parseExposedHost, upstreamExposedHost } from "./rewrite.js";
import { sandboxCustody, sandboxNotFound } from "./custody.js";
import { isPublicHostFor } from "./port-hosts.js";
import { sendUpstream } from "./runtime-forward.js";
import { requestUrl } from "../web/request-url.js";
import { clientView } from "../web/forwarded.js";
import { generateCookie } from "hono/cookie";

const BOOTSTRAP_PATH = "/_hb/auth";
const WS_OWN_HEADERS = ["sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol"];

/**
 * `next` of the bootstrap as a path on this same port host, or undefined. Resolved the way a browser would (tabs and
 * newlines dropped, `\` read as `/`), so `/%09/evil.example/` or `/\evil` cannot become `//evil.example/`.
 */
export function sameHostPath(next: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what a `next` may not carry
  if (!next.startsWith("/") || /[\x00-\x1f\x7f]/.test(next)) return undefined;
  const base = "http://port.invalid";
  let u: URL;
  try {
    u = new URL(next, base);
  } catch {
    return undefined;
  }
  const path = u.pathname + u.search + u.hash;
  return u.origin === base && !path.startsWith("//") ? path : undefined;
}

/** The client's headers for the app behind the port: its own Authorization and cookies kept, the gateway's removed. */
function appHeaders(incoming: Headers, dropAuthorization: boolean): Headers {
  const out = forwardableRequestHeaders(incoming);
  const auth = incoming.get("authorization");
  if (auth && !dropAuthorization) out.set("authorization", auth);
  const cookies = (incoming.get("cookie") ?? "").split(/;\s*/).filter((p) => p && !p.startsWith(`${PORT_COOKIE}=`));
  if (cookies.length) out.set("cookie", cookies.join("; "));
  return out;
}

export function exposedPorts(services: GatewayServices): MiddlewareHandler<GatewayEnv> {
  const custody = sandboxCustody(services);
  const { ownership } = services.stores;

  const bootstrap = async (c: Context<GatewayEnv>, id: string, owner: string): Promise<Response> => {
    const url = requestUrl(c);
    const grant = await portGrant(services, url.searchParams.get("grant") ?? "", id, owner, () => sandboxNotFound(id));
    const ttl = services.config.tokens.ttlSeconds;
    const cookie = await services.tokens.mint({ tenant: grant.tenant, kind: "sandbox", resource: id, scopes: ["ports"], ttlSeconds: ttl });
    const secure = (services.config.server.publicOrigin ?? clientView(c, services).protocol).startsWith("https:");
    const location = sameHostPath(url.searchParams.get("next") ?? "/");
    if (!location) throw new GatewayError(400, "invalid_next", "`next` must be a path on this host, such as /app/.");
    return new Response(null, {
      status: 302,
      headers: {
        location,
        "set-cookie": generateCookie(PORT_COOKIE, cookie.token, { path: "/", httpOnly: true, sameSite: "Lax", maxAge: ttl, secure }),
        "cache-control": "no-store",
      },
    });
  };

  // Mounted behind middleware/exposed-ports, which lets only a port-shaped Host (or X-Forwarded-Host) reach it.
  return function exposedPortsMiddleware(c, next) {
    const target = parseExposedHost(clientView(c, services).host);
    if (!target) return next();
    return servePort(c, target);
  };

  async function servePort(c: Context<GatewayEnv>, target: { port: number; id: string; rest: string }): Promise<Response> {
    // A port-shaped Host is either exactly one the gateway handed out, or nothing at all: never path routing.
    if (!(await isPublicHostFor(services, target.id, target.rest)))
      throw new GatewayError(404, "not_found", "No such host on this gateway.");
    const owner = await ownership.owner("sandbox", target.id);
    if (!owner) throw sandboxNotFound(target.id);
    c.get("logFields").route = "sandbox.port";
    const url = requestUrl(c);
    if (url.pathname === BOOTSTRAP_PATH) return bootstrap(c, target.id, owner);

    const headers = c.req.raw.headers;
    const { admitted, bearerIsOurs } = await portVisitor(services, c, target.id, owner, () => sandboxNotFound(target.id));
    c.get("logFields").tenant = owner;

    const cred = await custody.current(c, target.id);
    const base = new URL(cred.baseUrl);
    const out = appHeaders(headers, bearerIsOurs);
    if (admitted) out.set("authorization", `Bearer ${cred.token}`);
    const portHost = upstreamExposedHost({ baseUrl: cred.baseUrl, host: cred.host }, target.port);
    out.set("x-request-id", c.get("requestId"));
    const viaDns = exposedPortsViaDns(services.config.upstream.exposedPorts, base.hostname);
    if (!viaDns) out.set("host", portHost);
    const upstreamUrl = `${base.protocol}//${viaDns ? portHost : base.host}${url.pathname}${url.search}`;

    if (isWebSocketUpgrade(c.req.raw)) {
      const wsHeaders: Record<string, string> = {};
      out.forEach((v, k) => {
        if (!WS_OWN_HEADERS.includes(k)) wsHeaders[k] = v;
      });
      return services.webSocketRelay(c, { url: upstreamUrl.replace(/^http/, "ws"), headers: wsHeaders });
    }
    const m = c.req.method;
    const body = m === "GET" || m === "HEAD" ? null : c.req.raw.body;
    // The app's own cookies go back to the browser (the runtime plane drops Set-Cookie; a port's app is the browser's).
    return sendUpstream(c, services, { url: upstreamUrl, method: m, headers: out, body }, { keepSetCookie: true });
  }
}

/** Whether to reach `<port>-<id>.<runtime host>` by its own name, or through the runtime host with a Host header. */
export function exposedPortsViaDns(mode: "auto" | "dns" | "host-header", runtimeHostname: string): boolean {
  if (mode !== "auto") return mode === "dns";
  const h = runtimeHostname.toLowerCase().replace(/^\[|\]$/g, "");
  const local = h === "localhost" || h.endsWith(".localhost") || /^\d{1,3}(\.\d{1,3}){3}$/.test(h) || h.includes(":");
  return !local;
}
