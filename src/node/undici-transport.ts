// Node's fast upstream transport: undici.request with a keep-alive pool, ~2x global fetch on the hot path. Small bodies
// of known length are read whole and handed on as bytes (no Web stream per response); undici enforces the headers timeout.
// Answers relayed as they are take the direct relay (node:http, socket to socket) instead.
import { Agent, type Dispatcher, request, errors as undiciErrors } from "undici";
import { ReadableStream as NodeReadableStream } from "node:stream/web";
import { Readable } from "node:stream";
import { heldBodyResponse, UpstreamHeadersTimeout, type UpstreamTransport } from "../transport.js";
import { directRelay } from "./direct-relay.js";

const NULL_BODY = new Set([101, 204, 205, 304]);
/** Responses up to this size with a Content-Length are read whole before they are relayed; larger ones stream. */
const HELD_BODY_BYTES = 64 * 1024;

export function undiciTransport(
  opts: { connections?: number; headersTimeoutMs?: number } = {},
): UpstreamTransport & { close(): Promise<void> } {
  const dispatcher = new Agent({
    connections: opts.connections ?? 256,
    keepAliveTimeout: 30_000,
    headersTimeout: opts.headersTimeoutMs ?? 0,
    bodyTimeout: 0,
  });
  // Answers relayed to the client as they are (runtime, exposed ports) go socket to socket: src/node/direct-relay.ts.
  const direct = directRelay();
  return {
    enforcesHeadersTimeout: true,
    direct,
    async request(req) {
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => {
        headers[k] = v;
      });
      let body: Readable | string | Uint8Array | undefined;
      if (req.body instanceof ReadableStream) body = Readable.fromWeb(req.body as import("node:stream/web").ReadableStream);
      else if (req.body != null) body = req.body;
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(req.url, {
          method: req.method as Dispatcher.HttpMethod,
          headers,
          body,
          signal: req.signal,
          dispatcher,
          ...(req.headersTimeoutMs !== undefined ? { headersTimeout: req.headersTimeoutMs } : {}),
        });
      } catch (err) {
        if (err instanceof undiciErrors.HeadersTimeoutError) throw new UpstreamHeadersTimeout();
        throw err;
      }
      const outHeaders = new Headers();
      for (const k in res.headers) {
        const v = res.headers[k];
        if (v === undefined) continue;
        if (Array.isArray(v)) for (const x of v) outHeaders.append(k, x);
        else outHeaders.append(k, v);
      }
      const init = { status: res.statusCode, headers: outHeaders };
      if (NULL_BODY.has(res.statusCode) || req.method === "HEAD") {
        res.body.resume();
        return heldBodyResponse(null, init);
      }
      const length = Number(res.headers["content-length"] ?? NaN);
      if (length <= HELD_BODY_BYTES) return heldBodyResponse(new Uint8Array(await res.body.arrayBuffer()), init);
      // ReadableStream.from survives clients that disconnect mid-body (Readable.toWeb does not on Node 20).
      return new Response(NodeReadableStream.from(res.body) as ReadableStream<Uint8Array>, init);
    },
    close: () => {
      direct.close();
      return dispatcher.close();
    },
  };
}
