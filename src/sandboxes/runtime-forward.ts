// Sends one runtime call upstream with the kept runtime token: streams both ways, renews and replays once on a 401.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { heldBody, heldBodyNextTurn } from "../web/held-body.js";
import { hotHeader } from "../web/request-headers.js";
import type { PlatformSpeed } from "../web/speed.js";
import { upstreamRuntimeUrl } from "./rewrite.js";
import type { RuntimeCredential, RuntimeCustody } from "./custody.js";
import { setForwardHeader, type ForwardHeaders } from "../web/transport.js";

/** Bodies up to this size are buffered so a 401 can be replayed after renewal; larger ones stream and are not replayed. */
const REPLAYABLE_BODY_BYTES = 1024 * 1024;

const RUNTIME_UNAVAILABLE = "The sandbox runtime could not be reached; it may still be starting, try again shortly.";

export interface RuntimeCall {
  sandboxId: string;
  method: string;
  /** What follows `/sandbox/<id>` on the gateway, with query. */
  rest: string;
  /** Usually the client's own (`clientHeaders(c.req.raw.headers)`): built into a `Headers` only where one is needed. */
  headers: ForwardHeaders;
}

/** Reads the client's body: buffered when small and of known length (replayable), otherwise the stream itself. */
export async function clientBody(
  c: Context<GatewayEnv>,
  platform: PlatformSpeed,
): Promise<{ body: Uint8Array | ReadableStream<Uint8Array> | null; replayable: boolean }> {
  const m = c.req.method;
  if (m === "GET" || m === "HEAD" || m === "OPTIONS") return { body: null, replayable: true };
  // A declared small length is read at once: looking at `c.req.raw.body` first would cost a full Request on Node.
  const declared = hotHeader(platform, c, "content-length");
  const len = declared === undefined ? NaN : Number(declared);
  if (Number.isFinite(len) && len <= REPLAYABLE_BODY_BYTES) {
    // Already parsed in full, as most small bodies are (Node): taken as it is.
    const taken = heldBody(platform, c, REPLAYABLE_BODY_BYTES) ?? (await heldBodyNextTurn(platform, c, REPLAYABLE_BODY_BYTES));
    if (taken) return { body: taken, replayable: true };
    const bytes = await c.req.arrayBuffer().catch(() => {
      throw new GatewayError(400, "body_incomplete", "The request body ended before it was complete (the connection closed).");
    });
    return { body: new Uint8Array(bytes), replayable: true };
  }
  // No length (a chunked body, or a Request made in-process, which carries none): whether there is a body at all.
  if (!c.req.raw.body) return { body: null, replayable: true };
  return { body: c.req.raw.body, replayable: false };
}

export class RuntimeForwarder {
  /** Per runtime base URL seen: what every runtime path is appended to, and whether its host is allowed. */
  private readonly bases = new Map<string, { head: string; allowed: boolean }>();

  constructor(
    private readonly services: GatewayServices,
    private readonly custody: RuntimeCustody,
  ) {}

  /**
   * Sends a runtime call; `read`: the answer is for the gateway to read (a presign to rewrite), otherwise it is relayed
   * to the client as it is (see sendUpstream).
   */
  forward(c: Context<GatewayEnv>, call: RuntimeCall, opts: { read?: boolean } = {}): Promise<Response> {
    const m = c.req.method;
    // Bodiless methods (the hot path) go straight on; a body is read first (clientBody).
    if (m === "GET" || m === "HEAD" || m === "OPTIONS") return this.forwardWith(c, call, null, true, opts.read);
    return clientBody(c, this.services.platform).then(({ body, replayable }) => this.forwardWith(c, call, body, replayable, opts.read));
  }

  /** Sends a runtime call with a body the gateway rewrote (its length set anew); replayed once on a 401 as any small body. */
  forwardBytes(c: Context<GatewayEnv>, call: RuntimeCall, body: Uint8Array): Promise<Response> {
    setForwardHeader(call.headers, "content-length", String(body.byteLength));
    return this.forwardWith(c, call, body, true, false);
  }

  private async forwardWith(
    c: Context<GatewayEnv>,
    call: RuntimeCall,
    body: Uint8Array | ReadableStream<Uint8Array> | null,
    replayable: boolean,
    read: boolean | undefined,
  ): Promise<Response> {
    // The kept credential needs no await (a promise and its ticks per call); a state read or renewal does.
    let cred = this.custody.usableNow(call.sandboxId) ?? (await this.custody.current(c, call.sandboxId));
    let res = await this.send(c, cred, call, body, read);
    if (res.status === 401 && replayable) {
      await this.services.upstream.discard(c, res);
      cred = await this.custody.renew(c, call.sandboxId);
      res = await this.send(c, cred, call, body, read);
    }
    return res;
  }

  /** The upstream URL for a runtime path, refused unless it is on a configured upstream host. */
  target(cred: RuntimeCredential, rest: string): string {
    let base = this.bases.get(cred.baseUrl);
    if (!base) {
      // What follows the base can never change its host, so one check (and one URL parse) per base URL is enough.
      const probe = upstreamRuntimeUrl(cred.baseUrl, "/_");
      base = { head: probe.slice(0, -2), allowed: this.services.upstream.isAllowedUrl(probe) };
      if (this.bases.size >= 1024) this.bases.clear();
      this.bases.set(cred.baseUrl, base);
    }
    if (!base.allowed) {
      const host = /^[a-z]+:\/\/([^/?#]*)/i.exec(cred.baseUrl)?.[1] ?? "(not a URL)";
      this.services.logger.error("sandbox.runtime.refused", { host, reason: `runtime host ${host} not in upstream.allowedHosts` });
      throw new GatewayError(
        502,
        "upstream_url_refused",
        `The sandbox runtime is on a host the gateway is not configured to follow (upstream.allowedHosts; the gateway's log names the host).`,
      );
    }
    const path = rest.startsWith("/") ? rest : `/${rest}`;
    return path === "/" ? upstreamRuntimeUrl(cred.baseUrl, path) : base.head + path;
  }

  private async send(
    c: Context<GatewayEnv>,
    cred: RuntimeCredential,
    call: RuntimeCall,
    body: Uint8Array | ReadableStream<Uint8Array> | null,
    read = false,
  ): Promise<Response> {
    // Set on the call's own headers (a replay sets the same two again): no copy per request.
    const headers = call.headers;
    setForwardHeader(headers, "authorization", `Bearer ${cred.token}`);
    setForwardHeader(headers, "x-request-id", c.get("requestId"));
    const req = { url: this.target(cred, call.rest), method: call.method, headers, body };
    return read ? this.services.upstream.send(c, req, { unavailableMessage: RUNTIME_UNAVAILABLE }) : sendUpstream(c, this.services, req);
  }
}

/**
 * One upstream runtime request whose answer goes to the client as it is (headers timeout, client disconnect
 * propagated, body not cut, hop-by-hop headers dropped; on Node relayed socket to socket).
 */
export function sendUpstream(
  c: Context<GatewayEnv>,
  services: GatewayServices,
  req: { url: string; method: string; headers: ForwardHeaders; body: Uint8Array | ReadableStream<Uint8Array> | null },
  opts: { keepSetCookie?: boolean } = {},
): Promise<Response> {
  return services.upstream.forward(c, req, { unavailableMessage: RUNTIME_UNAVAILABLE, ...opts });
}
