// The Node fast path for the proxied planes (runtime, exposed ports, presigned files). Once the route table's chain
// has decided where a request goes, the upstream's answer reaches the client's socket without Web objects in between:
// node:http with a keep-alive Agent to the upstream, and the answer's body piped from the upstream's socket to the
// client's. The chain still sees an ordinary Response (status and headers, no body) and may add headers to it
// (x-request-id, rate-limit, CORS); `withDirectRelays` (the server's fetch wrapper) writes that status and those headers
// and pipes the body. Workers (and any other transport) keep the standard path: src/platform/upstream.ts `Upstream.forward`.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import {
  appSetCookie,
  isClientHeaders,
  REQUEST_DROPPED,
  RESPONSE_DROPPED,
  UpstreamHeadersTimeout,
  type ForwardHeaders,
  type RelayedAnswer,
  type RelayOptions,
  type RelayRequest,
} from "../transport.js";

/** What @hono/node-server passes as `env` for an HTTP/1 request. */
interface NodeClient {
  incoming?: IncomingMessage;
  outgoing?: ServerResponse;
}

/**
 * Marks the Response the chain sees, so the answer is still found if Hono copies it (it does when a middleware had
 * already looked at `c.res`); stripped before anything is written.
 */
const TAG = "x-tollgate-direct-relay";

/** An answer waiting for the chain to finish: the Response the chain saw, its tag, and the upstream message. */
interface Pending {
  response: Response;
  tag: string;
  upstream: IncomingMessage;
  /** The upstream's relayable headers. */
  headers: OutgoingHttpHeaders;
}

/** Headers the chain adds to, rather than replaces, when the upstream sent them too (CORS appends `Vary: Origin`). */
const MERGED = new Set(["vary", "set-cookie"]);

/** By the client's response object: at most one relayed answer per request (a replay discards the first). */
const pending = new WeakMap<ServerResponse, Pending>();
let tags = 0;
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** Set by `withDirectRelays` on the responses it will finish: only those can take a direct relay. */
const WRAPPED = Symbol("tollgate.directRelays");

const client = (env: unknown): (ServerResponse & { [WRAPPED]?: true }) | undefined => {
  const out = (env as NodeClient | undefined)?.outgoing as (ServerResponse & { [WRAPPED]?: true }) | undefined;
  return out?.[WRAPPED] ? out : undefined;
};

/**
 * The upstream request's headers as node:http takes them. The client's own are read off its parsed raw headers (names
 * lower-cased, repeats joined with ", " as a `Headers` would), minus REQUEST_DROPPED: no `Headers` object is built.
 */
function outgoingHeaders(h: ForwardHeaders, incoming: IncomingMessage | undefined): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  if (!isClientHeaders(h)) {
    h.forEach((v, k) => {
      headers[k] = v;
    });
    return headers;
  }
  const raw = incoming?.rawHeaders;
  if (raw) {
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase();
      if (REQUEST_DROPPED.has(k)) continue;
      const had = headers[k] as string | undefined;
      headers[k] = had === undefined ? raw[i + 1]! : `${had}, ${raw[i + 1]!}`;
    }
  } else
    h.client.forEach((v, k) => {
      if (!REQUEST_DROPPED.has(k)) headers[k] = v;
    });
  for (const k in h.set) headers[k] = h.set[k]!;
  return headers;
}

/**
 * Relays an upstream answer straight to the client's connection, for the undici transport's `relay` where the Node entry
 * offers the client's socket (`available`). The chain gets a body-less Response with the status (and a tag), which it may
 * add headers to; the server writes it and passes the body (withDirectRelays). It needs no abort signal: the client's
 * socket says when it goes away.
 */
interface DirectRelay {
  available(client: unknown): boolean;
  /** Enforces `headersTimeoutMs` (rejects with UpstreamHeadersTimeout) and follows the client going away. */
  relay(req: RelayRequest, client: unknown, opts: RelayOptions): Promise<RelayedAnswer>;
  /** Drops a relayed answer that will not be sent (a 401 before a replay); false if `response` is not one. */
  discard(response: Response, client: unknown): boolean;
  close(): void;
}

/** True when the Node entry offers this client's socket for a direct relay (its server finishes them: withDirectRelays). */
export const offersDirectRelay = (env: unknown): boolean => client(env) !== undefined;

/** Keep-alive agents of one gateway, and the parsed upstream origins (the path after them is all that changes). */
export function directRelay(): DirectRelay {
  const agents = {
    http: new HttpAgent({ keepAlive: true, maxSockets: 256 }),
    https: new HttpsAgent({ keepAlive: true, maxSockets: 256 }),
  };
  const origins = new Map<string, { secure: boolean; hostname: string; port: string }>();

  const target = (url: string) => {
    const slash = url.indexOf("/", url.indexOf("//") + 2);
    const origin = slash < 0 ? url : url.slice(0, slash);
    let o = origins.get(origin);
    if (!o) {
      const u = new URL(origin);
      o = { secure: u.protocol === "https:", hostname: u.hostname.replace(/^\[|\]$/g, ""), port: u.port };
      if (origins.size >= 1024) origins.clear();
      origins.set(origin, o);
    }
    return { ...o, path: slash < 0 ? "/" : url.slice(slash) };
  };

  const send = (req: RelayRequest, out: ServerResponse, retry: boolean, incoming?: IncomingMessage): Promise<IncomingMessage> => {
    const t = target(req.url);
    const headers = outgoingHeaders(req.headers, incoming);
    const body = req.body;
    if (body instanceof Uint8Array) headers["content-length"] = String(body.byteLength);
    else if (typeof body === "string") headers["content-length"] = String(Buffer.byteLength(body));
    return new Promise((resolve, reject) => {
      let answer: IncomingMessage | undefined;
      const up = (t.secure ? httpsRequest : httpRequest)(
        { hostname: t.hostname, port: t.port, path: t.path, method: req.method, headers, agent: t.secure ? agents.https : agents.http },
        (res) => {
          if (timer) clearTimeout(timer);
          answer = res;
          resolve(res);
        },
      );
      const timer =
        req.headersTimeoutMs !== undefined && req.headersTimeoutMs > 0
          ? setTimeout(() => up.destroy(new UpstreamHeadersTimeout()), req.headersTimeoutMs)
          : undefined;
      up.once("error", (err: NodeJS.ErrnoException) => {
        if (timer) clearTimeout(timer);
        // A kept-alive socket the upstream closed just as it was reused: an idempotent request is sent once more on a
        // fresh one (bodies in hand only). Node's agent already retires idle sockets before the upstream's keep-alive hint.
        if (
          retry &&
          up.reusedSocket &&
          err.code === "ECONNRESET" &&
          IDEMPOTENT.has(req.method) &&
          !(body instanceof ReadableStream) &&
          !out.destroyed
        )
          send(req, out, false, incoming).then(resolve, reject);
        else reject(err);
      });
      // A client that goes away before the answer is complete ends the upstream call too, whether it was still waiting
      // for the headers or the body was being piped (pipe alone would leave the upstream socket paused). No AbortSignal
      // is needed: the socket says so. (One listener for both phases; after a complete answer it does nothing.)
      out.once("close", () => {
        if (!answer?.complete) up.destroy();
      });
      if (body == null) up.end();
      else if (body instanceof Uint8Array || typeof body === "string") up.end(body);
      else Readable.fromWeb(body as import("node:stream/web").ReadableStream).pipe(up);
    });
  };

  return {
    available: offersDirectRelay,
    async relay(req, env, opts) {
      const out = client(env)!;
      const upstream = await send(req, out, true, (env as NodeClient).incoming);
      const tag = String(++tags);
      // The upstream's relayable headers stay here, as node:http takes them (repeats joined as a `Headers` would,
      // Set-Cookie as a list): the chain's Response carries only the tag and what the chain adds, so no `Headers` is
      // built from them; they are merged when the answer is written (withDirectRelays).
      const relayed: OutgoingHttpHeaders = {};
      const raw = upstream.rawHeaders;
      let contentLength: string | undefined;
      for (let i = 0; i < raw.length; i += 2) {
        const k = raw[i]!.toLowerCase();
        const v = raw[i + 1]!;
        if (k === "content-length") contentLength = v;
        if (k === "set-cookie") {
          // An exposed port's app: its own cookies, host-only, never the gateway's (appSetCookie).
          const kept = opts.keepSetCookie ? appSetCookie(v) : undefined;
          if (kept) relayed[k] = relayed[k] === undefined ? [kept] : [...(relayed[k] as string[]), kept];
          continue;
        }
        if (RESPONSE_DROPPED.has(k)) continue;
        const had = relayed[k];
        relayed[k] = had === undefined ? v : `${had as string}, ${v}`;
      }
      const response = new Response(null, { status: upstream.statusCode ?? 502, headers: [[TAG, tag]] });
      pending.get(out)?.upstream.destroy();
      pending.set(out, { response, tag, upstream, headers: relayed });
      return { response, contentLength: contentLength ?? null };
    },
    discard(response, env) {
      const out = client(env);
      const p = out && pending.get(out);
      if (!out || !p || p.response !== response) return false;
      pending.delete(out);
      p.upstream.resume(); // read to the end, so the keep-alive socket goes back to the pool
      return true;
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

type Fetch<E> = (req: Request, env: E) => Response | Promise<Response>;

/**
 * Wraps the server's fetch: when the chain's final answer is a directly relayed one, writes its status and headers
 * (the upstream's relayable ones plus whatever the chain added) and pipes the upstream's body to the client. A relayed
 * answer the chain replaced (an error after the handler) is dropped, and the replacement is sent as usual.
 */
export function withDirectRelays<E>(fetch: Fetch<E>): Fetch<E> {
  return async (req, env) => {
    const outgoing = (env as NodeClient | undefined)?.outgoing as (ServerResponse & { [WRAPPED]?: true }) | undefined;
    if (outgoing && typeof outgoing.writeHead === "function") outgoing[WRAPPED] = true;
    const res = await fetch(req, env);
    const out = client(env);
    const p = out && pending.get(out);
    if (!out || !p) return res;
    pending.delete(out);
    const upstream = p.upstream;
    // Hono hands on a copy of the handler's Response when a middleware had looked at `c.res` first (same status, no
    // body, our tag); when an error replaced the answer after the handler, it copies the headers set so far, tag included,
    // into the error's response, which has a body of its own.
    if (res !== p.response && (res.headers.get(TAG) !== p.tag || res.status !== p.response.status || res.body !== null)) {
      upstream.destroy();
      res.headers.delete(TAG);
      return res;
    }
    if (out.destroyed) {
      upstream.destroy();
      return RESPONSE_ALREADY_SENT;
    }
    // The upstream's headers, then the chain's: a header the chain set replaces the upstream's (x-request-id), except
    // the ones it adds to (MERGED); Set-Cookie stays a list.
    // (A `Headers` yields each name once, joined, except Set-Cookie, which it yields per cookie.)
    const headers: OutgoingHttpHeaders = { ...p.headers };
    res.headers.forEach((v, k) => {
      if (k === TAG) return;
      const had = headers[k];
      if (had === undefined || !MERGED.has(k)) headers[k] = k === "set-cookie" ? [v] : v;
      else if (k === "set-cookie") headers[k] = [...(had as string[]), v];
      else headers[k] = `${had as string}, ${v}`;
    });
    out.writeHead(res.status, headers);
    upstream.pipe(out);
    // An upstream that fails mid-body cuts the client's answer (it cannot be completed); a client gone mid-body
    // releases the upstream socket (the listener `send` put on the client's close).
    upstream.once("error", () => out.destroy());
    return RESPONSE_ALREADY_SENT;
  };
}
