// Pure rewriting of the upstream's sandbox responses so that every runtime, port and file URL points at the gateway.
import { readWire } from "../upstream/records.js";
import { Exposure, SandboxDetail } from "./wire.js";

/** `runtime` as the upstream and the SDK describe it. */
export interface SandboxRuntime {
  transport?: string;
  host?: string | null;
  baseUrl: string;
}

/** A credential the gateway mints in place of an upstream one. */
interface MintedToken {
  token: string;
  expiresAt: string;
}

export interface SandboxRewriteContext {
  /** Origin clients reach the gateway at, e.g. `https://gw.example.com` (no trailing slash). */
  publicOrigin: string;
  /** Gateway token for runtime, terminal and ports (replaces the upstream `token`). */
  mintRuntimeToken(sandboxId: string): Promise<MintedToken>;
  /** Gateway grant for an auth:true port's browser bootstrap link. */
  mintPortGrant(sandboxId: string): Promise<MintedToken>;
}

/** Mirrors the SDK's runtimeSessionIdFromPath: `/sandbox/<id>[/…]` → id. */
function sandboxIdFromPath(path: string): string | null {
  const segs = path
    .trim()
    .replace(/^\/+|\/+$/g, "")
    .split("/")
    .filter(Boolean);
  return segs.length >= 2 && segs[0] === "sandbox" && segs[1]!.trim() ? segs[1]!.trim() : null;
}

/** Mirrors the SDK's buildSandboxExposedUrl, so the gateway's `url` equals `sandbox.getExposedUrl(port)`. */
export function exposedUrlFor(runtime: SandboxRuntime, port: number): string {
  const base = new URL(runtime.baseUrl);
  const authority = exposedAuthority(runtime, port);
  try {
    return new URL("/", `${base.protocol}//${authority}`).toString();
  } catch {
    // A host ending in an IPv4 literal (`3000-sbx.127.0.0.1`) is not a valid URL host; the SDK cannot build it either,
    // so the string is returned as the upstream emulator writes it. Give the gateway a named publicOrigin for ports.
    return `${base.protocol}//${authority}/`;
  }
}

/** `<port>-<session host>[:<port of baseUrl>]`, the authority of an exposed port. */
function exposedAuthority(runtime: SandboxRuntime, port: number): string {
  const base = new URL(runtime.baseUrl);
  const host = sessionHostOf(runtime, base).toLowerCase();
  return base.port ? `${port}-${host}:${base.port}` : `${port}-${host}`;
}

function sessionHostOf(runtime: SandboxRuntime, base: URL): string {
  const fromPath = sandboxIdFromPath(base.pathname);
  if (fromPath && base.hostname) return `${fromPath}.${base.hostname}`;
  const host = runtime.host?.trim() ?? "";
  if (host) {
    try {
      const parsed = new URL(host);
      const id = sandboxIdFromPath(parsed.pathname);
      if (id && parsed.hostname) return `${id}.${parsed.hostname}`;
      if (parsed.hostname) return parsed.hostname;
    } catch {
      return host;
    }
  }
  return base.hostname;
}

/** The runtime the gateway hands out: `<publicOrigin>/sandbox/<id>`. */
export function gatewayRuntime(publicOrigin: string, sandboxId: string, transport = "regional_proxy"): Required<SandboxRuntime> {
  return { transport, host: publicOrigin, baseUrl: `${publicOrigin}/sandbox/${encodeURIComponent(sandboxId)}` };
}

/**
 * The upstream URL for a runtime call: `rest` is what follows `/sandbox/<id>` on the gateway (`/exec?x=1`).
 * Same normalisation as the SDK: a region-path base (`…/sandbox/<id>`) gets `rest` appended, a session-host base
 * gets `/sandbox<rest>`.
 */
export function upstreamRuntimeUrl(upstreamBaseUrl: string, rest: string): string {
  const base = new URL(upstreamBaseUrl);
  const path = rest.startsWith("/") ? rest : `/${rest}`;
  const prefix = base.pathname.replace(/\/+$/, "");
  const joined = sandboxIdFromPath(base.pathname) ? `${prefix}${path}` : `${prefix}/sandbox${path === "/" ? "" : path}`;
  return `${base.protocol}//${base.host}${joined}`;
}

/** Host the upstream routes an exposed port by: the SDK's derivation applied to the upstream runtime. */
export function upstreamExposedHost(upstreamRuntime: SandboxRuntime, port: number): string {
  return exposedAuthority(upstreamRuntime, port);
}

/** Parses `<port>-<id>.<rest>` out of a Host header; `rest` must be checked by the caller. */
export function parseExposedHost(host: string | undefined | null): { port: number; id: string; rest: string } | undefined {
  if (!host) return undefined;
  const m = /^(\d{1,5})-([^.]+)\.(.+)$/.exec(host.trim().toLowerCase());
  if (!m) return undefined;
  const port = Number(m[1]);
  if (port < 1 || port > 65535) return undefined;
  return { port, id: m[2]!, rest: m[3]! };
}

/** Host (with port when not the scheme default) of an origin, lower-cased: what follows `<port>-<id>.`. */
export function hostOfOrigin(origin: string): string {
  return new URL(origin).host.toLowerCase();
}

/** One exposed port as the gateway shows it: its own URL and, for auth:true, its own bootstrap grant. */
export async function rewriteExposure(exposure: unknown, sandboxId: string, ctx: SandboxRewriteContext): Promise<Exposure> {
  const e = readWire(Exposure, exposure);
  const url = exposedUrlFor(gatewayRuntime(ctx.publicOrigin, sandboxId), e.port ?? Number.NaN);
  const { browserUrl: _b, browserUrlExpiresAt: _x, ...rest } = e;
  if (!e.auth) return { ...rest, url, browserUrl: url };
  const grant = await ctx.mintPortGrant(sandboxId);
  return {
    ...rest,
    url,
    browserUrl: `${url}_hb/auth?grant=${encodeURIComponent(grant.token)}&next=%2F`,
    browserUrlExpiresAt: grant.expiresAt,
  };
}

/**
 * A sandbox (detail or list entry) as the gateway shows it: runtime and exposed ports on the gateway, and the
 * upstream runtime token replaced by a gateway token (or null when the upstream has none: sandbox not running).
 */
export async function rewriteSandboxDetail<T extends object>(record: T, ctx: SandboxRewriteContext): Promise<T & SandboxDetail> {
  const detail = readWire(SandboxDetail, record);
  const id = String(detail.id);
  const out: SandboxDetail = { ...detail };
  if (detail.runtime && typeof detail.runtime === "object")
    out.runtime = gatewayRuntime(ctx.publicOrigin, id, detail.runtime.transport ?? "regional_proxy");
  if (Array.isArray(detail.exposedPorts)) out.exposedPorts = await Promise.all(detail.exposedPorts.map((e) => rewriteExposure(e, id, ctx)));
  // The upstream's own page for the sandbox: the gateway's control-plane URL for it stands in (never the upstream host).
  if ("sessionUrl" in detail)
    out.sessionUrl = detail.sessionUrl ? `${ctx.publicOrigin}/api/sandbox/${encodeURIComponent(id)}` : detail.sessionUrl;
  if ("token" in detail) {
    if (detail.token) {
      const t = await ctx.mintRuntimeToken(id);
      out.token = t.token;
      out.tokenExpiresAt = t.expiresAt;
    } else {
      out.token = null;
      out.tokenExpiresAt = null;
    }
  }
  return out as T & SandboxDetail; // the record's own fields, kept, with the rewritten ones
}

/** The gateway URL a presigned file URL becomes: fetched without auth, mapped server-side to the upstream URL. */
export function presignedGatewayUrl(publicOrigin: string, sandboxId: string, ticket: string): string {
  return `${publicOrigin}/sandbox/${encodeURIComponent(sandboxId)}/files/presigned?ticket=${encodeURIComponent(ticket)}`;
}
