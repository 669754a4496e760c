// Exposed ports by Host `<port>-<id>.<gateway host>`: HTTP and WebSocket relayed to the upstream's port host; auth:true
// ports admitted with the gateway token (Bearer) or the cookie its browserUrl bootstrap sets, then the upstream bearer.
// Fails closed: a port request is sent only in a form that names the port (portRoute), never as a plain request to the
// runtime origin, whose API would take it with the runtime token added.
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
import { ConfigError } from "../../config/load.js";
import type { TollgateConfig } from "../../config/schema.js";

const BOOTSTRAP_PATH = "/_hb/auth";
const WS_OWN_HEADERS = ["sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol"];
/**
 * Names the exposed port to the local emulator where neither DNS nor `Host` can (Workers' fetch in front of an emulator
 * on 127.0.0.1/localhost): the emulator serves the port this header names, never its runtime API (emulator/README.md).
 */
const PORT_HOST_HEADER = "x-tollgate-port-host";

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
  const mode = services.config.upstream.exposedPorts;
  const httpSetsHost = services.upstream.transport.setsHost === true;
  const wsSetsHost = services.webSocketRelay.setsHost === true;
  refuseUnsendableMode(mode, httpSetsHost && wsSetsHost);

  const bootstrap = async (c: Context<GatewayEnv>, id: string, owner: string): Promise<Response> => {
    const url = requestUrl(c);
    const grant = await portGrant(services, url.searchParams.get("grant") ?? "", id, owner, () => sandboxNotFound(id));
    const ttl = services.config.tokens.ttlSeconds;
    const cookie = await services.tokens.mint({
      tenant: grant.tenant,
      kind: "sandbox",
      resource: id,
      scopes: ["ports"],
      ttlSeconds: ttl,
      // The cookie dies with the link it came from (its key, its grant, the gateway tokens it derives from, whose
      // expiry it then shares: the link's own exp is never later than theirs).
      ...(grant.parentKey ? { parentKey: grant.parentKey } : {}),
      ...(grant.grant ? { grant: grant.grant } : {}),
      ...(grant.parentTokens?.length ? { parentTokens: grant.parentTokens, notAfter: grant.exp } : {}),
    });
    const maxAge = Math.max(0, Math.min(ttl, Math.floor((Date.parse(cookie.expiresAt) - services.now()) / 1000)));
    const secure = (services.config.server.publicOrigin ?? clientView(c, services).protocol).startsWith("https:");
    const location = sameHostPath(url.searchParams.get("next") ?? "/");
    if (!location) throw new GatewayError(400, "invalid_next", "`next` must be a path on this host, such as /app/.");
    return new Response(null, {
      status: 302,
      headers: {
        location,
        "set-cookie": generateCookie(PORT_COOKIE, cookie.token, { path: "/", httpOnly: true, sameSite: "Lax", maxAge, secure }),
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
    const ws = isWebSocketUpgrade(c.req.raw);
    const route = portRoute(mode, base.hostname, ws ? wsSetsHost : httpSetsHost);
    if (route === "host-header") out.set("host", portHost);
    else if (route === "port-header") out.set(PORT_HOST_HEADER, portHost);
    const upstreamUrl = `${base.protocol}//${route === "dns" ? portHost : base.host}${url.pathname}${url.search}`;

    if (ws) {
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

/**
 * How a port request reaches `<port>-<id>.<runtime host>`: "dns" connects to that name itself; "host-header" connects
 * to the runtime origin and names the port in `Host` (only where the transport sends `Host` as given: undici, `ws`);
 * "port-header" connects to the runtime origin and names the port in PORT_HOST_HEADER (the local emulator, any
 * transport). "auto": "dns" for a named runtime host; for localhost and IP runtime hosts (a local emulator, whose
 * wildcard names do not resolve) "host-header" where the transport can set Host, else "port-header".
 */
export function portRoute(
  mode: TollgateConfig["upstream"]["exposedPorts"],
  runtimeHostname: string,
  setsHost: boolean,
): "dns" | "host-header" | "port-header" {
  if (mode !== "auto") return mode;
  const h = runtimeHostname.toLowerCase().replace(/^\[|\]$/g, "");
  const local = h === "localhost" || h.endsWith(".localhost") || /^\d{1,3}(\.\d{1,3}){3}$/.test(h) || h.includes(":");
  if (!local) return "dns";
  return setsHost ? "host-header" : "port-header";
}

/**
 * Refuses at start a mode this runtime cannot carry out: "host-header" where the transport or the WebSocket relay sends
 * the URL's own host whatever `Host` says (Workers' fetch), which would take a port request to the runtime API.
 */
export function refuseUnsendableMode(mode: TollgateConfig["upstream"]["exposedPorts"], setsHost: boolean): void {
  if (mode === "host-header" && !setsHost)
    throw new ConfigError([
      'upstream.exposedPorts: "host-header" names the port in the Host header, which this runtime\'s fetch cannot set ' +
        '(it sends the URL\'s own host); use "dns" where <port>-<id>.<runtime host> resolves, or "port-header" (or "auto") ' +
        "in front of the local emulator",
    ]);
}
