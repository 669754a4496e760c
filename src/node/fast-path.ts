// Node fast path for the proxied planes (prototype, not wired yet): once the chain has decided where a request goes,
// pipe it with node:http (keep-alive Agent) from the client's socket to the upstream and back, with no Request/Response,
// no Headers objects and no Web streams in between. See bench/PROFILE.md for how it plugs into the route table.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Context } from "hono";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { errors } from "../errors.js";
import { RESPONSE_DROPPED } from "../transport.js";

/** Where the chain decided a proxied request goes, and how its answer is passed back. */
export interface ForwardDecision {
  /** Absolute upstream URL, already checked against the allowed hosts. */
  url: string;
  method: string;
  /** The final upstream request headers (forwardable client headers, injected bearer, x-request-id, Host if any). */
  headers: Record<string, string>;
  /** "client": the client's body is piped as it comes; bytes: sent as they are (and can be replayed); null: none. */
  body: "client" | Uint8Array | null;
  /** Headers added to the client's response (x-request-id), after the hop-by-hop ones and set-cookie are dropped. */
  responseHeaders?: Record<string, string>;
  /** Keep the upstream's Set-Cookie (exposed ports do; the runtime plane does not). */
  keepSetCookie?: boolean;
  /** On a 401, called once to renew the upstream credential; the request is replayed (not with a "client" body). */
  onUnauthorized?: () => Promise<ForwardDecision>;
  /** Give up when no response headers came in this long (504). */
  headersTimeoutMs: number;
  /** Shown on a 502 when the upstream cannot be reached. */
  unavailableMessage?: string;
}

const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 256 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 256 }) };

function upstreamResponse(d: ForwardDecision, incoming: IncomingMessage, outgoing: ServerResponse): Promise<IncomingMessage> {
  const u = new URL(d.url);
  const secure = u.protocol === "https:";
  return new Promise((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(
      {
        protocol: u.protocol,
        hostname: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: d.method,
        headers: d.headers,
        agent: secure ? agents.https : agents.http,
      },
      (res) => {
        clearTimeout(timer);
        resolve(res);
      },
    );
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error("upstream headers timeout"), { code: "HEADERS_TIMEOUT" })),
      d.headersTimeoutMs,
    );
    req.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // The client going away ends the upstream call too (the response's close: the request's fires once its body is read).
    const onClientGone = () => req.destroy();
    outgoing.once("close", onClientGone);
    req.once("close", () => outgoing.off("close", onClientGone));
    if (d.body === "client") incoming.pipe(req);
    else req.end(d.body ?? undefined);
  });
}

/**
 * Sends the decided request and writes the upstream's answer to the client's socket itself. Failures before the
 * upstream answered are GatewayErrors (502/504), which the chain turns into JSON as usual; afterwards the response is
 * already on its way and the returned marker tells @hono/node-server so. `c.get("logFields").status` gets the status.
 */
// biome-ignore lint/suspicious/noExplicitAny: called from handlers of every route module, each with its own Hono env type
export async function nodeForward(c: Context<any>, decision: ForwardDecision): Promise<Response> {
  const env = c.env as { incoming: IncomingMessage; outgoing: ServerResponse };
  let d = decision;
  let res: IncomingMessage;
  for (let attempt = 0; ; attempt++) {
    try {
      res = await upstreamResponse(d, env.incoming, env.outgoing);
    } catch (err) {
      if ((err as { code?: string }).code === "HEADERS_TIMEOUT") throw errors.upstreamTimeout();
      throw errors.upstreamUnavailable(d.unavailableMessage);
    }
    if (res.statusCode === 401 && d.onUnauthorized && d.body !== "client" && attempt === 0) {
      res.resume();
      d = await d.onUnauthorized();
      continue;
    }
    break;
  }
  const out: OutgoingHttpHeaders = {};
  for (const k in res.headers) {
    if (RESPONSE_DROPPED.has(k) && !(k === "set-cookie" && d.keepSetCookie)) continue;
    out[k] = res.headers[k];
  }
  for (const k in d.responseHeaders) out[k] = d.responseHeaders[k];
  const status = res.statusCode ?? 502;
  env.outgoing.writeHead(status, out);
  res.pipe(env.outgoing);
  res.once("error", () => env.outgoing.destroy());
  // A client gone mid-body releases the upstream socket too (pipe alone would leave it paused).
  env.outgoing.once("close", () => {
    if (!res.complete) res.destroy();
  });
  const fields = c.get("logFields");
  if (fields) fields.status = status;
  return RESPONSE_ALREADY_SENT;
}
