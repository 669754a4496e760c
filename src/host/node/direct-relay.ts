// The Node fast path for the proxied planes (runtime, exposed ports, presigned files). Once the route table's chain
// has decided where a request goes, the upstream's answer reaches the client's socket without Web objects and without
// Node streams in between: undici's dispatcher (the transport's keep-alive pools) calls back with the answer's head and
// its body chunks, which are written to the client's ServerResponse as they come. The chain still sees an ordinary
// Response (status, no body) and may add headers to it (x-request-id and the rate limit's through setResponseHeader,
// gathered in a record; others such as CORS on its Headers);
// `withDirectRelays` (the server's fetch wrapper) writes that status and those headers and then the body. Workers (and
// any other transport) keep the standard path: src/upstream/exchange.ts `UpstreamExchange.forward`.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { type Dispatcher, util as undiciUtil } from "undici";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import {
  appSetCookie,
  isClientHeaders,
  REQUEST_DROPPED,
  RESPONSE_DROPPED,
  type ForwardHeaders,
  type RelayedAnswer,
  type RelayOptions,
  type RelayRequest,
} from "../../web/transport.js";
import { splitRequestUrl } from "../../web/request-url.js";
import { deferResponseHeaders } from "../../web/response-headers.js";
import { Exchange } from "./relay-exchange.js";
import { turnEnd } from "./turn-writes.js";
import { headerlessCheck } from "./unread-headers.js";

/** What @hono/node-server passes as `env` for an HTTP/1 request. */
interface NodeClient {
  incoming?: IncomingMessage;
  outgoing?: ServerResponse;
}

/**
 * Marks the Response the chain sees (its status text, never written: the head is written with the status alone), so the
 * answer is still found if Hono copies it (it does when a middleware had already looked at `c.res`). Not a header: a
 * `Headers` built for every answer costs more than the rest of the marker.
 */
const TAG = "tollgate direct relay ";

/** An answer waiting for the chain to finish: the Response the chain saw, its tag, and the exchange with the upstream. */
interface Pending {
  response: Response;
  tag: string;
  exchange: Exchange;
  /** The upstream's relayable headers. */
  headers: OutgoingHttpHeaders;
  /** Headers the chain set with setResponseHeader (src/web/response-headers.ts). */
  added: Record<string, string>;
}

/** Headers the chain adds to, rather than replaces, when the upstream sent them too (CORS appends `Vary: Origin`). */
const MERGED = new Set(["vary", "set-cookie"]);

/**
 * On the client's response object: at most one relayed answer per request (a replay discards the first). A property
 * rather than a WeakMap entry: a request's response object lives as long as the request, and a WeakMap's entries cost
 * each request a hash and the collector's ephemeron pass.
 */
const PENDING = Symbol("tollgate.relayPending");
type WithPending = ServerResponse & { [PENDING]?: Pending | undefined };
const pending = {
  get: (out: ServerResponse) => (out as WithPending)[PENDING],
  set: (out: ServerResponse, p: Pending) => {
    (out as WithPending)[PENDING] = p;
  },
  delete: (out: ServerResponse) => {
    (out as WithPending)[PENDING] = undefined;
  },
};
let tags = 0;
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** Set by `withDirectRelays` on the responses it will finish: only those can take a direct relay. */
const WRAPPED = Symbol("tollgate.directRelays");

const client = (env: unknown): (ServerResponse & { [WRAPPED]?: true }) | undefined => {
  const out = (env as NodeClient | undefined)?.outgoing as (ServerResponse & { [WRAPPED]?: true }) | undefined;
  return out?.[WRAPPED] ? out : undefined;
};

/**
 * The upstream request's headers as undici takes them (a flat name, value list). The client's own are read off its
 * parsed raw headers (names lower-cased, minus REQUEST_DROPPED and the names `set` replaces): no `Headers` object is built.
 */
function outgoingHeaders(h: ForwardHeaders, incoming: IncomingMessage | undefined): string[] {
  const headers: string[] = [];
  if (!isClientHeaders(h)) {
    h.forEach((v, k) => {
      headers.push(k, v);
    });
    return headers;
  }
  const set = h.set;
  const raw = incoming?.rawHeaders;
  if (raw) {
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase();
      if (!REQUEST_DROPPED.has(k) && set[k] === undefined) headers.push(k, raw[i + 1]!);
    }
  } else
    h.client.forEach((v, k) => {
      if (!REQUEST_DROPPED.has(k) && set[k] === undefined) headers.push(k, v);
    });
  for (const k in set) headers.push(k, set[k]!);
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
}

/** True when the Node entry offers this client's socket for a direct relay (its server finishes them: withDirectRelays). */
export const offersDirectRelay = (env: unknown): boolean => client(env) !== undefined;

/** The direct relay of one gateway, over the transport's dispatcher (keep-alive pools by origin). */
export function directRelay(dispatcher: Dispatcher): DirectRelay {
  return {
    available: offersDirectRelay,
    async relay(req, env, opts) {
      const out = client(env)!;
      const target = splitRequestUrl(req.url);
      const body = req.body;
      const exchange = new Exchange(
        dispatcher,
        {
          origin: target.origin,
          path: target.path + target.query,
          method: req.method as Dispatcher.HttpMethod,
          headers: outgoingHeaders(req.headers, (env as NodeClient).incoming),
          body:
            body == null || body instanceof Uint8Array || typeof body === "string"
              ? body
              : Readable.fromWeb(body as import("node:stream/web").ReadableStream),
        },
        out,
        req.headersTimeoutMs,
        IDEMPOTENT.has(req.method) && !(body instanceof ReadableStream),
      );
      await exchange.head;
      const tag = TAG + ++tags;
      // The upstream's relayable headers stay here, as node:http takes them (repeats joined as a `Headers` would,
      // Set-Cookie as a list): the chain's Response carries only the tag and what the chain adds, so no `Headers` is
      // built from them; they are merged when the answer is written (withDirectRelays).
      const relayed: OutgoingHttpHeaders = {};
      const raw = exchange.rawHeaders;
      let contentLength: string | undefined;
      for (let i = 0; i < raw.length; i += 2) {
        const k = undiciUtil.headerNameToString(raw[i]!);
        const v = raw[i + 1]!.toString("latin1");
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
      // No headers of its own: node-server's Response builds an empty `Headers` only if the chain reads or sets them
      // (CORS); otherwise the server sees it has none without one (withDirectRelays).
      const response = new Response(null, { status: exchange.status, statusText: tag });
      const added = deferResponseHeaders(response);
      pending.get(out)?.exchange.destroy();
      pending.set(out, { response, tag, exchange, headers: relayed, added });
      return { response, contentLength: contentLength ?? null };
    },
    discard(response, env) {
      const out = client(env);
      const p = out && pending.get(out);
      if (!out || !p || p.response !== response) return false;
      pending.delete(out);
      p.exchange.discard();
      return true;
    },
  };
}

type Fetch<E> = (req: Request, env: E) => Response | Promise<Response>;

/**
 * Wraps the server's fetch: when the chain's final answer is a directly relayed one, writes its status and headers
 * (the upstream's relayable ones plus whatever the chain added) and hands the client to the exchange for the body. A relayed
 * answer the chain replaced (an error after the handler) is dropped, and the replacement is sent as usual.
 */
export function withDirectRelays<E>(fetch: Fetch<E>): Fetch<E> {
  /** Whether an answer has no headers, read without building them (node-server's Response: known once `serve` runs). */
  let headerless: ((res: Response) => boolean) | undefined;
  return async (req, env) => {
    const outgoing = (env as NodeClient | undefined)?.outgoing as (ServerResponse & { [WRAPPED]?: true }) | undefined;
    if (outgoing && typeof outgoing.writeHead === "function") outgoing[WRAPPED] = true;
    const res = await fetch(req, env);
    const out = client(env);
    const p = out && pending.get(out);
    if (!out || !p) return res;
    pending.delete(out);
    const exchange = p.exchange;
    // Hono hands on a copy of the handler's Response when a middleware had looked at `c.res` first (same status and
    // status text, no body, the headers set so far); an error that replaced the answer after the handler has a body
    // and a status text of its own.
    if (res !== p.response && (res.status !== p.response.status || res.body !== null || res.statusText !== p.tag)) {
      exchange.destroy();
      return res;
    }
    if (out.destroyed) {
      exchange.destroy();
      return RESPONSE_ALREADY_SENT;
    }
    // The upstream's headers, then the chain's: a header the chain set replaces the upstream's (x-request-id), except
    // the ones it adds to (MERGED); Set-Cookie stays a list.
    // (A `Headers` yields each name once, joined, except Set-Cookie, which it yields per cookie.)
    const headers = p.headers; // this answer's own, made by relay(): written to in place
    const add = (v: string, k: string) => {
      const had = headers[k];
      if (had === undefined || !MERGED.has(k)) headers[k] = k === "set-cookie" ? [v] : v;
      else if (k === "set-cookie") headers[k] = [...(had as string[]), v];
      else headers[k] = `${had as string}, ${v}`;
    };
    for (const k in p.added) add(p.added[k]!, k);
    headerless ??= headerlessCheck() ?? (() => false);
    if (!headerless(res)) res.headers.forEach(add);
    await turnEnd(); // written with the turn's other answers (./turn-writes.ts)
    if (out.destroyed) {
      exchange.destroy();
      return RESPONSE_ALREADY_SENT;
    }
    out.writeHead(res.status, headers);
    // An upstream that fails mid-body cuts the client's answer (it cannot be completed); a client gone mid-body ends
    // the upstream request (Exchange).
    exchange.attach(out);
    return RESPONSE_ALREADY_SENT;
  };
}
