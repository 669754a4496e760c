// The one guard for every outbound fetch a client or tenant can name (an OAuth client's metadata document, an alert
// webhook, and later egress): the URL checked (scheme, no credentials, an IP literal or a local-only name refused), the
// name resolved and every address it resolves to refused when loopback, private, link-local (cloud metadata), shared
// (CGNAT), multicast or reserved, IPv4 and IPv6 alike, mapped and wrapped forms folded (../operators/alerts/destinations.ts),
// then a connection to the address that was checked, no redirect followed, bounded in time and in size. Whatever goes
// wrong before an answer (refused, no such name, connection refused or reset, timeout) is one error with one message,
// so a client naming a URL learns nothing of what listens where; the reason is kept for the log only.
//
// Node picks `nodeDestinationGuard` (src/host/node/destination-guard.ts: its own resolver, a connect-time lookup
// that checks each address). Workers cannot resolve a name before fetch() connects, so `webDestinationGuard` checks
// what it can see (the URL: IP literals in every notation, local-only names) and relies on the platform for the rest:
// a Worker's fetch() does not reach the account's private network or the machine it runs on (docs/security.md).
import { DestinationRules, type DestinationPolicy } from "./destinations.js";

/** One outbound request to a URL a client or tenant named. */
export interface GuardedRequest {
  url: string;
  method?: "GET" | "POST";
  headers?: Headers;
  body?: string;
  /** The whole exchange, connection and body included. */
  timeoutMs: number;
  /** The answer's body: more is refused, not cut. */
  maxBytes: number;
  policy: DestinationPolicy;
}

interface GuardedAnswer {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

/** One streamed exchange with a URL a tenant named (the secrets' egress): any method, the body streamed both ways. */
export interface GuardedStream {
  url: string;
  method: string;
  headers: Headers;
  body: ReadableStream<Uint8Array> | Uint8Array | null;
  /** How long the destination has to answer with its headers; the body then streams as long as it lasts. */
  headersTimeoutMs: number;
  policy: DestinationPolicy;
  /** Aborts the exchange (the client went away). */
  signal?: AbortSignal;
}

/** The guard the entry picks (services.destinations). */
export interface DestinationGuard {
  /** @throws DestinationUnreachable for anything that kept an answer from coming back. */
  fetch(req: GuardedRequest): Promise<GuardedAnswer>;
  /**
   * The same checks, no redirect followed, and the answer's body streamed as it comes (SSE passes).
   * @throws DestinationUnreachable for anything that kept the answer's headers from coming back.
   */
  stream(req: GuardedStream): Promise<Response>;
}

/**
 * The one error of a destination that gave no answer: its message is the same whether the address was refused, the
 * name unknown, the port closed or the host silent; `reason` says which, for the gateway's own log only.
 */
export class DestinationUnreachable extends Error {
  constructor(readonly reason: string) {
    super("the destination could not be reached (it may not be public, or did not answer in time)");
  }
}

/** Reads at most `max` bytes of a stream: more is refused. */
async function boundedBytes(body: ReadableStream<Uint8Array> | null, max: number, declared?: number): Promise<Uint8Array> {
  if (declared !== undefined && declared > max) throw new DestinationUnreachable(`the answer is larger than ${max} bytes`);
  const reader = body?.getReader();
  if (!reader) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new DestinationUnreachable(`the answer is larger than ${max} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return all;
}

/** Web-standard guard (Workers): the URL checked, then fetch() with no redirect, bounded in time and size. */
export const webDestinationGuard: DestinationGuard = {
  async fetch(req) {
    const problem = new DestinationRules(req.policy).urlProblem(req.url);
    if (problem) throw new DestinationUnreachable(`refused: ${problem}`);
    const signal = AbortSignal.timeout(req.timeoutMs);
    let res: Response;
    try {
      res = await fetch(req.url, { method: req.method ?? "GET", headers: req.headers, body: req.body, redirect: "manual", signal });
    } catch (err) {
      throw new DestinationUnreachable(err instanceof Error ? err.message : String(err));
    }
    const length = res.headers.get("content-length");
    try {
      const body = await boundedBytes(res.body, req.maxBytes, length === null ? undefined : Number(length));
      return { status: res.status, headers: res.headers, body };
    } catch (err) {
      await res.body?.cancel().catch(() => {});
      throw err instanceof DestinationUnreachable ? err : new DestinationUnreachable(err instanceof Error ? err.message : String(err));
    }
  },
  async stream(req) {
    const problem = new DestinationRules(req.policy).urlProblem(req.url);
    if (problem) throw new DestinationUnreachable(`refused: ${problem}`);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${req.headersTimeoutMs} ms`)), req.headersTimeoutMs);
    req.signal?.addEventListener("abort", () => abort.abort(req.signal?.reason), { once: true });
    try {
      const init: RequestInit & { duplex?: "half" } = {
        method: req.method,
        headers: req.headers,
        body: req.body as BodyInit | null,
        redirect: "manual",
        signal: abort.signal,
        ...(req.body instanceof ReadableStream ? { duplex: "half" } : {}),
      };
      return await fetch(req.url, init);
    } catch (err) {
      throw new DestinationUnreachable(err instanceof Error ? err.message : String(err));
    } finally {
      clearTimeout(timer);
    }
  },
};
