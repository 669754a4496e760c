// Node's destination guard (../destination-guard.ts): the name resolved by the guard's own resolver at connect time,
// every address it resolves to checked (../../operators/alerts/destinations.ts), and the socket connected to the address
// that was checked (node:http's `lookup` hook: no second lookup a DNS rebinding could answer differently). node:http
// follows no redirect. Time and size bounded; every failure before an answer is the one DestinationUnreachable.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { DestinationRules, destinationHost } from "../../web/destinations.js";
import { type DestinationGuard, DestinationUnreachable, type GuardedRequest, type GuardedStream } from "../../web/destination-guard.js";

/** Resolves a host name to its addresses (default: the system's resolver; tests pass their own). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** A connect-time lookup that fails when any address of the name is refused by `rules`. */
function checkedLookup(rules: DestinationRules, resolver: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolver(hostname).then(
      (all) => {
        const addresses = options.family ? all.filter((a) => a.family === options.family) : all;
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
        for (const a of addresses) {
          const problem = rules.addressProblem(a.address);
          if (problem)
            return callback(Object.assign(new Error(`refused: ${hostname} resolves to ${problem}`), { code: "EREFUSED" }), "", 0);
        }
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        const first = addresses[0]!;
        callback(null, first.address, first.family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, "", 0),
    );
  };
}

/**
 * Where a guarded exchange connects: the URL checked by the rules (names are judged by what they resolve to, at
 * connect time, through the checked lookup; an IP literal is connected to without one, urlProblem having checked it
 * through the same normaliser), or the refusal.
 */
function checkedTarget(req: { url: string; policy: GuardedRequest["policy"] }, resolver: Resolver | undefined) {
  const rules = new DestinationRules(req.policy);
  const problem = rules.urlProblem(req.url, { names: false });
  if (problem) return new DestinationUnreachable(`refused: ${problem}`);
  const u = new URL(req.url);
  const literal = "ip" in destinationHost(u.hostname);
  return {
    u,
    send: u.protocol === "https:" ? httpsRequest : httpRequest,
    lookup: literal ? {} : { lookup: checkedLookup(rules, resolver) },
  };
}

/** @example createGateway(config, { ..., destinations: nodeDestinationGuard() }) */
export function nodeDestinationGuard(opts: { resolver?: Resolver } = {}): DestinationGuard {
  return {
    fetch: (req) => guardedRequest(req, opts.resolver),
    stream: (req) => guardedStream(req, opts.resolver),
  };
}

/** A streamed exchange: the same checks and connect-time lookup; the answer's body is the socket's, as it comes. */
function guardedStream(req: GuardedStream, resolver: Resolver | undefined): Promise<Response> {
  const target = checkedTarget(req, resolver);
  if (target instanceof DestinationUnreachable) return Promise.reject(target);
  const { u, send, lookup } = target;
  return new Promise<Response>((resolve, reject) => {
    let answered = false;
    const fail = (reason: string) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      request.destroy();
      reject(new DestinationUnreachable(reason));
    };
    const timer = setTimeout(() => fail(`no answer within ${req.headersTimeoutMs} ms`), req.headersTimeoutMs);
    const request = send(
      u,
      {
        method: req.method,
        headers: Object.fromEntries(req.headers),
        ...lookup,
        agent: false,
      },
      (res: IncomingMessage) => {
        if (answered) return void res.destroy();
        answered = true;
        clearTimeout(timer);
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
        const status = res.statusCode ?? 502;
        const empty = status === 204 || status === 304 || req.method === "HEAD";
        if (empty) res.resume();
        resolve(new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, headers }));
      },
    );
    request.on("error", (err: NodeJS.ErrnoException) =>
      fail(err.message.startsWith("refused:") ? err.message : `unreachable (${err.code ?? err.message})`),
    );
    req.signal?.addEventListener("abort", () => request.destroy(), { once: true });
    if (req.body instanceof ReadableStream) Readable.fromWeb(req.body as never).pipe(request);
    else request.end(req.body ?? undefined);
  });
}

function guardedRequest(req: GuardedRequest, resolver: Resolver | undefined) {
  const target = checkedTarget(req, resolver);
  if (target instanceof DestinationUnreachable) return Promise.reject(target);
  const { u, send, lookup } = target;
  return new Promise<{ status: number; headers: Headers; body: Uint8Array }>((resolve, reject) => {
    let settled = false;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      reject(new DestinationUnreachable(reason));
    };
    const timer = setTimeout(() => fail(`no answer within ${req.timeoutMs} ms`), req.timeoutMs);
    const request = send(
      u,
      {
        method: req.method ?? "GET",
        headers: req.headers ? Object.fromEntries(req.headers) : {},
        ...lookup,
        agent: false,
      },
      (res: IncomingMessage) => {
        const declared = Number(res.headers["content-length"] ?? "0");
        if (declared > req.maxBytes) return fail(`the answer is larger than ${req.maxBytes} bytes`);
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.byteLength;
          if (size > req.maxBytes) return fail(`the answer is larger than ${req.maxBytes} bytes`);
          chunks.push(chunk);
        });
        res.on("error", (err) => fail(err.message));
        res.on("end", () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
          resolve({ status: res.statusCode ?? 0, headers, body: new Uint8Array(Buffer.concat(chunks)) });
        });
      },
    );
    request.on("error", (err: NodeJS.ErrnoException) =>
      fail(err.message.startsWith("refused:") ? err.message : `unreachable (${err.code ?? err.message})`),
    );
    request.end(req.body);
  });
}
