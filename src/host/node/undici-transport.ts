// Node's fast upstream transport: undici.request with a keep-alive pool, ~2x global fetch on the hot path. Small bodies
// of known length are read whole and handed on as bytes (no Web stream per response). The transport times the wait for
// the answer itself, from the call on: undici's own headers timeout starts only once a request has a connection, and
// it does not fire while a request body is still being written. Answers relayed as they are take the direct relay
// (undici's dispatcher straight to the client's socket) instead.
import { type Dispatcher, request } from "undici";
import { ReadableStream as NodeReadableStream } from "node:stream/web";
import { Readable } from "node:stream";
import { heldBodyResponse, relayByRequest, UpstreamHeadersTimeout, type UpstreamTransport } from "../../web/transport.js";
import { upstreamAgent } from "./undici-agent.js";
import { directRelay } from "./direct-relay.js";

const NULL_BODY = new Set([101, 204, 205, 304]);
/** Responses up to this size with a Content-Length are read whole before they are relayed; larger ones stream. */
const HELD_BODY_BYTES = 64 * 1024;

/** A Node stream over a request body that calls `onChunk` for each chunk the upstream connection takes. */
function reportingReadable(body: ReadableStream<Uint8Array>, onChunk: () => void): Readable {
  const reader = body.getReader();
  return new Readable({
    read() {
      reader.read().then(
        (r) => {
          if (r.done) this.push(null);
          else {
            onChunk();
            this.push(r.value);
          }
        },
        (err) => this.destroy(err),
      );
    },
    destroy(err, callback) {
      reader.cancel(err ?? undefined).then(
        () => callback(err),
        () => callback(err),
      );
    },
  });
}

export function undiciTransport(
  opts: { connections?: number; headersTimeoutMs?: number } = {},
): UpstreamTransport & { close(): Promise<void> } {
  const dispatcher = upstreamAgent(opts.connections ?? 256);
  // Answers relayed to the client as they are (runtime, exposed ports) go socket to socket: src/host/node/direct-relay.ts.
  const direct = directRelay(dispatcher);
  const transport: UpstreamTransport & { close(): Promise<void> } = {
    enforcesHeadersTimeout: true,
    // undici sends the `host` header it is given (an exposed port of a local emulator, through the runtime origin).
    setsHost: true,
    /** Socket to socket where the Node entry offers the client's socket (server.directRelay), else request + relayResponse. */
    relay: (req, client, opts) => (direct.available(client) ? direct.relay(req, client, opts) : relayByRequest(transport, req, opts)),
    discard: (response, client) => direct.discard(response, client),
    /**
     * Settles within `headersTimeoutMs` (UpstreamHeadersTimeout) unless the answer came, counting from the call and from
     * each chunk of request body sent (a slow client upload is not the upstream's delay): also while the request waits
     * for a free connection. It settles at once when `signal` aborts, wherever the request is.
     */
    async request(req) {
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => {
        headers[k] = v;
      });
      const timeoutMs = req.headersTimeoutMs ?? opts.headersTimeoutMs ?? 0;
      // One controller for undici: the client's signal and the timer both end the request through it. Undici reads
      // an abort only once the request has a connection; `gaveUp` settles this call at once all the same.
      const ctrl = new AbortController();
      let giveUp!: (reason: unknown) => void;
      const gaveUp = new Promise<never>((_, reject) => {
        giveUp = reject;
      });
      gaveUp.catch(() => {});
      const end = (reason: unknown) => {
        ctrl.abort(reason);
        giveUp(reason);
      };
      const clientSignal = req.signal;
      if (clientSignal?.aborted) end(clientSignal.reason);
      else clientSignal?.addEventListener("abort", () => end(clientSignal.reason), { once: true });
      const timer = timeoutMs > 0 ? setTimeout(() => end(new UpstreamHeadersTimeout()), timeoutMs) : undefined;
      let body: Readable | string | Uint8Array | undefined;
      if (req.body instanceof ReadableStream) body = reportingReadable(req.body, () => timer?.refresh());
      else if (req.body != null) body = req.body;
      try {
        const sent = request(req.url, { method: req.method as Dispatcher.HttpMethod, headers, body, signal: ctrl.signal, dispatcher });
        sent.catch(() => {});
        const res = await Promise.race([sent, gaveUp]);
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
        // A held body is part of the answer: the client gets nothing until it is read, so the timer runs on.
        if (length <= HELD_BODY_BYTES) return heldBodyResponse(new Uint8Array(await Promise.race([res.body.arrayBuffer(), gaveUp])), init);
        // ReadableStream.from survives clients that disconnect mid-body (Readable.toWeb does not on Node 20).
        return new Response(NodeReadableStream.from(res.body) as ReadableStream<Uint8Array>, init);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => dispatcher.close(),
  };
  return transport;
}
