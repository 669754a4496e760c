// Exposed ports: requests for `<port>-<id>.<runtime-host>` relayed, HTTP and WebSocket alike, to the port inside.
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { request as httpRequest, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError, errorBody } from "./errors.js";
import type { SandboxService } from "./registry.js";
import type { Sandbox } from "./sandbox.js";
import { bearer, type TokenIssuer } from "./tokens.js";
import type { RuntimeEnv } from "./runtime-env.js";

const EXPOSED_HOST = /^(\d{1,5})-(sbx_[a-z0-9]+)\./i;
const cookieName = (port: number) => `hb_port_${port}`;
/** Hop-by-hop headers a proxy must not forward. */
const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
]);

function parseExposedHost(host: string | undefined): { port: number; id: string } | undefined {
  const m = host ? EXPOSED_HOST.exec(host) : null;
  return m ? { port: Number(m[1]), id: m[2]! } : undefined;
}

/**
 * Names the exposed port where `Host` cannot: a client whose HTTP stack sends the URL's own host (Workers' fetch)
 * connects to the runtime listener and puts `<port>-<id>.<runtime host>` here. The real service routes by name only
 * (DNS); this is the emulator's stand-in for that, as the gateway's "port-header" mode uses it.
 */
export const PORT_HOST_HEADER = "x-tollgate-port-host";

/**
 * The exposed port a request on the runtime listener is for: named by PORT_HOST_HEADER (which wins) or by Host. A
 * request that carries the header but names no port is refused, never served by the runtime API (fail closed).
 */
export function exposedTarget(header: string | undefined, host: string | undefined): { port: number; id: string } | undefined {
  if (header === undefined) return parseExposedHost(host);
  const target = parseExposedHost(header);
  if (!target) throw new ApiError(400, "invalid_port_host", `${PORT_HOST_HEADER} must name <port>-<id>.<runtime host>`);
  return target;
}

export class PortRouter {
  constructor(
    private readonly service: SandboxService,
    private readonly tokens: TokenIssuer,
  ) {}

  /** Finds the sandbox and checks exposure and credentials; returns whether the Authorization header was ours. */
  private async admit(
    target: { port: number; id: string },
    headers: Headers,
    cookie: string | undefined,
  ): Promise<{ sb: Sandbox; ownAuth: boolean }> {
    const sb = this.service.get(target.id);
    sb.assertActive();
    const entry = sb.exposed.get(target.port);
    if (!entry) throw new ApiError(403, "port_not_exposed", `Port ${target.port} is not exposed`);
    const token = bearer(headers);
    if (!entry.auth) return { sb, ownAuth: false };
    if (token) {
      await this.tokens.verify(token, "runtime", sb.id);
      return { sb, ownAuth: true };
    }
    if (cookie) {
      const claims = await this.tokens.verify(cookie, "port-cookie", sb.id);
      if (claims.port === target.port) return { sb, ownAuth: false };
    }
    throw new ApiError(401, "unauthorized", `Port ${target.port} requires Authorization: Bearer <sandbox token>`);
  }

  /** Plain HTTP to an exposed port; streams both bodies through the in-sandbox relay. */
  async http(c: Context<RuntimeEnv>, target: { port: number; id: string }): Promise<Response> {
    const url = new URL(c.req.url);
    if (url.pathname === "/_hb/auth") return this.browserGrant(c, target);
    const { sb, ownAuth } = await this.admit(target, c.req.raw.headers, getCookie(c, cookieName(target.port)));
    const agent = await sb.agent("user");
    const { incoming, outgoing } = c.env;
    const headers = forwardHeaders(incoming, ownAuth, target.port);
    return new Promise<Response>((resolve) => {
      const upstream = httpRequest({
        method: incoming.method,
        path: incoming.url,
        headers,
        createConnection: () => agent.connectPort(target.port) as any,
      });
      upstream.on("response", (res) => {
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
        outgoing.writeHead(res.statusCode ?? 502, out);
        res.pipe(outgoing);
        outgoing.on("close", () => res.destroy());
        resolve(RESPONSE_ALREADY_SENT);
      });
      upstream.on("error", () => {
        if (outgoing.headersSent) return void outgoing.destroy();
        resolve(
          new Response(
            errorBody(new ApiError(502, "port_unreachable", `Nothing answered on port ${target.port} inside sandbox ${sb.id}`)),
            { status: 502, headers: { "content-type": "application/json" } },
          ),
        );
      });
      incoming.pipe(upstream);
    });
  }

  /** `<url>_hb/auth?grant=…&next=/`: trades a short-lived grant for a cookie, then sends the browser on. */
  private async browserGrant(c: Context<RuntimeEnv>, target: { port: number; id: string }): Promise<Response> {
    const claims = await this.tokens.verify(c.req.query("grant"), "port-grant", target.id);
    if (claims.port !== target.port) throw new ApiError(401, "unauthorized", "Grant is for another port");
    const cookie = await this.tokens.sign("port-cookie", target.id, 12 * 3600, { port: target.port });
    setCookie(c, cookieName(target.port), cookie.token, { httpOnly: true, path: "/", sameSite: "Lax", maxAge: 12 * 3600 });
    const next = c.req.query("next") ?? "/";
    return c.redirect(next.startsWith("/") && !next.startsWith("//") ? next : "/", 302);
  }

  /** WebSocket (or any Upgrade) to an exposed port: after admission the raw bytes are spliced through. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: { port: number; id: string }): void {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const cookie = parseCookie(req.headers.cookie, cookieName(target.port));
    this.admit(target, headers, cookie)
      .then(async ({ sb, ownAuth }) => {
        const relay = (await sb.agent("user")).connectPort(target.port);
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        const named = req.headers[PORT_HOST_HEADER];
        for (let i = 0; i < req.rawHeaders.length; i += 2) {
          const name = req.rawHeaders[i]!;
          const lower = name.toLowerCase();
          if (ownAuth && lower === "authorization") continue;
          if (lower === PORT_HOST_HEADER) continue;
          // The app sees the host it was reached by, however the port was named (see forwardHeaders).
          lines.push(`${name}: ${lower === "host" && typeof named === "string" ? named : req.rawHeaders[i + 1]}`);
        }
        relay.write(lines.join("\r\n") + "\r\n\r\n");
        if (head.length) relay.write(head);
        relay.on("error", () => socket.destroy());
        socket.on("error", () => relay.destroy());
        relay.pipe(socket).pipe(relay);
      })
      .catch((err) => rejectUpgrade(socket, err));
  }
}

function forwardHeaders(incoming: IncomingMessage, ownAuth: boolean, port: number): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(incoming.headers)) {
    if (v === undefined || HOP.has(k)) continue;
    if (k === "authorization" && ownAuth) continue;
    if (k === PORT_HOST_HEADER) continue;
    if (k === "cookie" && typeof v === "string") {
      const rest = v
        .split(/;\s*/)
        .filter((p) => !p.startsWith(`${cookieName(port)}=`))
        .join("; ");
      if (rest) out[k] = rest;
      continue;
    }
    out[k] = v;
  }
  // The app sees the host it was reached by, as behind the real service's proxy, however the port was named.
  const named = incoming.headers[PORT_HOST_HEADER];
  if (typeof named === "string") out.host = named;
  return out;
}

function parseCookie(header: string | undefined, name: string): string | undefined {
  for (const part of header?.split(/;\s*/) ?? []) if (part.startsWith(`${name}=`)) return decodeURIComponent(part.slice(name.length + 1));
  return undefined;
}

/** Answers a refused upgrade with the upstream's JSON error, which the SDK turns into a HyperbrowserError. */
export function rejectUpgrade(socket: Duplex, err: unknown): void {
  const e = err instanceof ApiError ? err : new ApiError(500, "internal_error", "Internal emulator error");
  const payload = errorBody(e);
  socket.end(
    `HTTP/1.1 ${e.status} ${e.code}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\nconnection: close\r\n\r\n${payload}`,
  );
}
