// How the core reaches the upstream: a small interface, Web `fetch` by default, a faster one picked by the Node entry.

interface UpstreamRequest {
  url: string;
  method: string;
  headers: Headers;
  body?: ReadableStream<Uint8Array> | Uint8Array | string | null;
  signal?: AbortSignal;
}

export interface UpstreamTransport {
  /** Sends one request; never follows redirects; the response body streams. */
  request(req: UpstreamRequest): Promise<Response>;
}

/** Web-standard transport, used on Workers (and as the reference elsewhere). */
export const fetchTransport: UpstreamTransport = {
  request(req) {
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

const HOP_BY_HOP = [
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

/** Request headers to forward upstream: the client's, minus hop-by-hop and the client's own credentials. */
export function forwardableRequestHeaders(incoming: Headers, drop: string[] = []): Headers {
  const out = new Headers();
  const dropped = new Set([...HOP_BY_HOP, "x-api-key", "authorization", "cookie", "payment-signature", "x-payment", ...drop]);
  incoming.forEach((v, k) => {
    if (!dropped.has(k)) out.set(k, v);
  });
  // Let the transport negotiate its own compression; an SSE or file stream must not be recompressed.
  out.delete("accept-encoding");
  return out;
}

/** Response headers to return to the client, minus hop-by-hop ones (content-length kept when known). */
export function forwardableResponseHeaders(upstream: Headers, drop: string[] = []): Headers {
  const out = new Headers();
  const dropped = new Set([...HOP_BY_HOP.filter((h) => h !== "content-length"), "set-cookie", ...drop]);
  upstream.forEach((v, k) => {
    if (!dropped.has(k)) out.append(k, v);
  });
  return out;
}
