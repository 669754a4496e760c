// How the core reaches the upstream: a small interface, Web `fetch` by default, a faster one picked by the Node entry.

/**
 * The client's own headers to forward (minus REQUEST_DROPPED), with `set` (lower-case names) on top, built only by the
 * path that sends them: the Node relay reads them off the socket's parsed headers and never makes a `Headers` object.
 */
export interface ClientHeaders {
  readonly client: Headers;
  readonly set: Record<string, string>;
}

/** Headers for an upstream call: a built `Headers`, or the client's own to be forwarded (see ClientHeaders). */
export type ForwardHeaders = Headers | ClientHeaders;

export const clientHeaders = (client: Headers): ClientHeaders => ({ client, set: {} });

export const isClientHeaders = (h: ForwardHeaders): h is ClientHeaders => !(h instanceof Headers) && "set" in h && "client" in h;

/** Sets one header (lower-case name) on either kind. */
export function setForwardHeader(h: ForwardHeaders, name: string, value: string): void {
  if (isClientHeaders(h)) h.set[name] = value;
  else h.set(name, value);
}

/** A `Headers` for the path that needs one (fetch, undici): the client's forwardable headers, then `set`. */
export function toHeaders(h: ForwardHeaders): Headers {
  if (!isClientHeaders(h)) return h;
  const out = forwardableRequestHeaders(h.client);
  for (const k in h.set) out.set(k, h.set[k]!);
  return out;
}

interface UpstreamRequest {
  url: string;
  method: string;
  headers: Headers;
  body?: ReadableStream<Uint8Array> | Uint8Array | string | null;
  signal?: AbortSignal;
  /** Wait for the response headers at most this long (only read by transports with `enforcesHeadersTimeout`). */
  headersTimeoutMs?: number;
}

export interface UpstreamTransport {
  /** Sends one request; never follows redirects; the response body streams. */
  request(req: UpstreamRequest): Promise<Response>;
  /**
   * The transport enforces `headersTimeoutMs` itself and rejects with UpstreamHeadersTimeout past it, wherever the
   * request waits (for a connection, too), so the caller needs no timer of its own (the Node transport).
   */
  readonly enforcesHeadersTimeout?: boolean;
  /**
   * The runtime itself cancels a request's subrequests when its client goes away (Workers), so the caller does not
   * follow the client's signal (there it never fires without the `enable_request_signal` flag anyway).
   */
  readonly cancelledWithClient?: boolean;
  /**
   * The transport sends a `host` header as given (undici on Node), so one connection to the runtime origin can name an
   * exposed port's host. Absent: the URL's own host is what goes out (Workers' fetch replaces `Host`), and the
   * transport refuses a request whose `host` names another (UnsentHost): it never sends it elsewhere than asked.
   */
  readonly setsHost?: boolean;
  /**
   * Sends a request whose answer goes back to the client as it is (the proxied planes: runtime, exposed ports,
   * presigned files), minus hop-by-hop headers and Set-Cookie (unless `keepSetCookie`: an exposed port's app cookies,
   * see appSetCookie). `client` is the runtime's own handle on the request (Hono's `c.env`): the Node transport relays
   * straight to the client's socket when the Node entry offers it (src/host/node/direct-relay.ts). Absent:
   * `request`, then relayResponse (relayByRequest), as on Workers.
   */
  relay?(req: RelayRequest, client: unknown, opts: RelayOptions): Promise<RelayedAnswer>;
  /** Drops an answer `relay` gave that will not be sent (a 401 before a replay); false if it is not one of its own. */
  discard?(response: Response, client: unknown): boolean;
}

/** An upstream request whose answer the client gets as it is: its headers may stay the client's own (ClientHeaders). */
export interface RelayRequest extends Omit<UpstreamRequest, "headers" | "signal"> {
  headers: ForwardHeaders;
  /** The client's abort signal, asked for only by a transport that needs one (on Node, making it costs a controller). */
  signal: () => AbortSignal | undefined;
}

export interface RelayOptions {
  keepSetCookie?: boolean;
}

/** A relayed answer: the Response the chain sees (on Node a body-less one), and the upstream's Content-Length. */
export interface RelayedAnswer {
  response: Response;
  contentLength: string | null;
}

/** `relay` for a transport without its own: `request`, then the answer made relayable (relayResponse). */
export async function relayByRequest(transport: UpstreamTransport, req: RelayRequest, opts: RelayOptions): Promise<RelayedAnswer> {
  const res = await transport.request({ ...req, headers: toHeaders(req.headers), signal: req.signal() });
  return { response: relayResponse(res, opts.keepSetCookie), contentLength: res.headers.get("content-length") };
}

/**
 * An upstream response as the client gets it (streaming), minus hop-by-hop headers and Set-Cookie; `keepSetCookie`:
 * the app's own cookies pass (appSetCookie), never the gateway's.
 */
export function relayResponse(res: Response, keepSetCookie?: boolean, extraHeaders?: Record<string, string>): Response {
  const headers = forwardableResponseHeaders(res.headers);
  if (extraHeaders) for (const [k, v] of Object.entries(extraHeaders)) headers.set(k, v);
  if (keepSetCookie)
    for (const sc of res.headers.getSetCookie?.() ?? []) {
      const kept = appSetCookie(sc);
      if (kept) headers.append("set-cookie", kept);
    }
  const { body, held } = relayableBody(res);
  // A transport's own response has no status text worth reading (and reading it costs a full Response on Node).
  return new Response(
    body as BodyInit | null,
    held ? { status: res.status, headers } : { status: res.status, statusText: res.statusText, headers },
  );
}

/** What a transport with `enforcesHeadersTimeout` rejects with when the upstream sent no headers in time. */
export class UpstreamHeadersTimeout extends Error {
  constructor() {
    super("upstream headers timeout");
    this.name = "UpstreamHeadersTimeout";
  }
}

/**
 * Bodies a transport already holds whole (small, of known length), by the Response it made for them: relaying such a
 * response hands the bytes on as they are instead of going through a Web stream, and it has no status text to
 * read. Responses from elsewhere (fetch on Workers) are not in it and are relayed the standard way.
 */
const heldBodies = new WeakMap<Response, Uint8Array | null>();

/** Makes a Response for bytes a transport read whole (see heldBodies). */
export function heldBodyResponse(body: Uint8Array | null, init: { status: number; headers: Headers }): Response {
  const res = new Response(body as BodyInit | null, init);
  heldBodies.set(res, body);
  return res;
}

/**
 * A response's body to pass on: the transport's bytes when it held them whole, else the stream. (Not `res.bodyUsed`:
 * on Node that getter alone builds a full Response; the held bytes stay intact when the Response is read anyway.)
 */
function relayableBody(res: Response): { body: Uint8Array | ReadableStream<Uint8Array> | null; held: boolean } {
  if (heldBodies.has(res)) return { body: heldBodies.get(res)!, held: true };
  return { body: res.body, held: false };
}

/**
 * What a transport that cannot set `Host` (fetch) rejects with when asked to send one other than the URL's own: the
 * request would otherwise reach the URL's host as itself (for an exposed port, the sandbox's runtime API).
 */
export class UnsentHost extends Error {
  constructor(host: string, url: string) {
    super(`this transport cannot send Host ${host} to ${new URL(url).host}; the request was not sent`);
    this.name = "UnsentHost";
  }
}

/** The `host` a request names when it differs from its URL's own host (what fetch would silently send instead). */
export function foreignHost(url: string, headers: Headers | Record<string, string>): string | undefined {
  const host = headers instanceof Headers ? headers.get("host") : (headers.host ?? headers.Host);
  if (host == null) return undefined;
  return host.toLowerCase() === new URL(url).host.toLowerCase() ? undefined : host;
}

/** Web-standard transport, used on Workers (and as the reference elsewhere). */
export const fetchTransport: UpstreamTransport = {
  request(req) {
    const host = foreignHost(req.url, req.headers);
    if (host !== undefined) return Promise.reject(new UnsentHost(host, req.url));
    return fetch(req.url, {
      method: req.method,
      headers: req.headers,
      body: (req.body ?? undefined) as BodyInit | undefined,
      redirect: "manual",
      signal: req.signal,
      // Required by Node's fetch for streamed request bodies; ignored where not needed.
      ...({ duplex: "half" } as object),
    });
  },
};

const HOP_BY_HOP_LIST = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
  "host",
  "content-length",
];

// Built once: these run on every proxied request. Lookups are by lower-case name (Headers iterate lower-cased).
// accept-encoding: the transport negotiates its own compression; an SSE or file stream must not be recompressed.
// expect: an expectation of the gateway's own server, met there (100 Continue, or 417); the transport sends whole bodies
// and does not take it (undici refuses a request that carries it).
export const REQUEST_DROPPED = new Set([
  ...HOP_BY_HOP_LIST,
  "x-api-key",
  "authorization",
  "cookie",
  "payment-signature",
  "x-payment",
  "accept-encoding",
  "expect",
  // Asking the upstream to read the request as another method than the one the gateway routed and metered.
  "x-http-method-override",
  "x-method-override",
  "x-http-method",
  // Names an exposed port to the local emulator (src/sandboxes/ports.ts, "port-header"): only the port relay sets it.
  "x-tollgate-port-host",
]);
export const RESPONSE_DROPPED = new Set([...HOP_BY_HOP_LIST.filter((h) => h !== "content-length"), "set-cookie"]);

/**
 * A Set-Cookie from an exposed port's app, as the gateway passes it on: never one of the gateway's own cookies
 * (`tollgate_*`, with or without a `__Host-`/`__Secure-` prefix: the app could otherwise plant a port grant or a
 * console session), and never for a wider domain than the port's own host (a `Domain=` attribute is dropped, so the
 * cookie is host-only and reaches neither the gateway's host nor another sandbox's ports). Undefined: not passed on.
 */
export function appSetCookie(header: string): string | undefined {
  const [pair, ...attributes] = header.split(";");
  const name = (pair ?? "")
    .split("=")[0]!
    .trim()
    .toLowerCase()
    .replace(/^__(host|secure)-/, "");
  if (!name || name.startsWith("tollgate_")) return undefined;
  const kept = attributes.filter((a) => a.trim().split("=")[0]!.trim().toLowerCase() !== "domain");
  return [pair, ...kept].join(";");
}

/** Request headers to forward upstream: the client's, minus hop-by-hop and the client's own credentials. */
export function forwardableRequestHeaders(incoming: Headers, drop: string[] = []): Headers {
  const out = new Headers();
  const extra = drop.length ? new Set(drop.map((d) => d.toLowerCase())) : undefined;
  incoming.forEach((v, k) => {
    if (!REQUEST_DROPPED.has(k) && !extra?.has(k)) out.set(k, v);
  });
  return out;
}

/** Response headers to return to the client, minus hop-by-hop ones (content-length kept when known). */
function forwardableResponseHeaders(upstream: Headers, drop: string[] = []): Headers {
  const out = new Headers();
  const extra = drop.length ? new Set(drop.map((d) => d.toLowerCase())) : undefined;
  upstream.forEach((v, k) => {
    if (!RESPONSE_DROPPED.has(k) && !extra?.has(k)) out.append(k, v);
  });
  return out;
}
