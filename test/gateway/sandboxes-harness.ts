// The sandbox emulator with a Node gateway in front (two tenants), the unmodified SDK per tenant, and a leak recorder:
// every byte the gateway writes to clients, every log line, and every upstream credential the gateway ever received.
import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { request } from "undici";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { undiciTransport } from "../../src/host/node/undici-transport.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { relayByRequest, type UpstreamTransport } from "../../src/web/transport.js";
import { offersDirectRelay } from "../../src/host/node/direct-relay.js";

const JWT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;
const CAPTURE_LIMIT = 64 * 1024 * 1024;

export interface SandboxStack {
  emu: EmulatorHandle;
  gw: RunningGateway;
  /** The gateway as clients call it: `http://localhost:<port>` (a named host, so exposed-port URLs are valid URLs). */
  gatewayUrl: string;
  keys: { alice: string; bob: string };
  alice: Hyperbrowser;
  bob: Hyperbrowser;
  logs: string[];
  /** Upstream secrets seen by the gateway: API key, runtime host, and every token the upstream issued. */
  upstreamSecrets(): string[];
  /** Everything the gateway sent to clients (capped), as latin1 text. */
  clientBytes(): string;
  /** How many answers went through the Node fast path (src/host/node/direct-relay.ts) so far. */
  directRelays(): number;
  close(): Promise<void>;
}

/** Wraps the gateway's transport to learn every credential the upstream hands it (tokens in JSON bodies and URLs). */
function recordingTransport(inner: UpstreamTransport, seen: Set<string>, relayed: { n: number }): UpstreamTransport {
  const relay = inner.relay;
  const outer: UpstreamTransport = {
    // The Node fast path stays on (runtime and port answers carry no upstream token), counted; the standard path's
    // relays go through `request` below.
    enforcesHeadersTimeout: inner.enforcesHeadersTimeout,
    setsHost: inner.setsHost,
    relay: relay
      ? (req, client, opts) => {
          if (!offersDirectRelay(client)) return relayByRequest(outer, req, opts);
          relayed.n++;
          return relay(req, client, opts);
        }
      : undefined,
    discard: inner.discard && ((res, client) => inner.discard!(res, client)),
    async request(req) {
      const res = await inner.request(req);
      if ((res.headers.get("content-type") ?? "").includes("json") && res.body) {
        const [a, b] = res.body.tee();
        void new Response(b)
          .text()
          .then((t) => {
            for (const m of t.match(JWT) ?? []) seen.add(m);
          })
          .catch(() => {});
        return new Response(a, { status: res.status, statusText: res.statusText, headers: res.headers });
      }
      return res;
    },
  };
  return outer;
}

export async function startSandboxStack(
  opts: {
    runtimeTokenTtlSeconds?: number;
    tokenTtlSeconds?: number;
    server?: Record<string, unknown>;
    egress?: Record<string, unknown>;
  } = {},
): Promise<SandboxStack> {
  const emu = await startEmulator({ modules: ["sandboxes"], runtimeTokenTtlSeconds: opts.runtimeTokenTtlSeconds });
  const keys = { alice: generateTenantKey(), bob: generateTenantKey() };
  // The emulator names its runtime `localhost:<port>` (a named host, so exposed-port URLs parse); both forms are its.
  const runtimePort = new URL(emu.runtimeUrl).port;
  const runtimeHosts = [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`];
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "debug", ...opts.server },
    upstream: { baseUrl: emu.controlUrl, allowedHosts: runtimeHosts },
    tokens: { ttlSeconds: opts.tokenTtlSeconds ?? 900 },
    ...(opts.egress ? { egress: opts.egress } : {}),
    tenants: [
      { id: "alice", keys: [{ hash: await hashTenantKey(keys.alice) }], scopes: ["sandboxes"] },
      { id: "bob", keys: [{ hash: await hashTenantKey(keys.bob) }], scopes: ["sandboxes"] },
    ],
  });
  const logs: string[] = [];
  const seen = new Set<string>();
  const relayed = { n: 0 };
  const transport = undiciTransport({ headersTimeoutMs: config.upstream.timeoutMs });
  const gw = await startNodeGateway({
    config,
    secrets: { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
    logSink: (l) => logs.push(l),
    deps: { transport: recordingTransport(transport, seen, relayed) },
  });
  const captured: Buffer[] = [];
  let capturedBytes = 0;
  gw.server.on("connection", (sock: Socket) => {
    const write = sock.write.bind(sock) as (...a: any[]) => boolean;
    (sock as any).write = (chunk: any, ...rest: any[]) => {
      if (capturedBytes < CAPTURE_LIMIT) {
        const b =
          typeof chunk === "string"
            ? Buffer.from(chunk)
            : Buffer.from(chunk.buffer ?? chunk, chunk.byteOffset ?? 0, chunk.byteLength ?? chunk.length);
        captured.push(Buffer.from(b));
        capturedBytes += b.length;
      }
      return write(chunk, ...rest);
    };
  });
  const gatewayUrl = `http://localhost:${gw.port}`;
  return {
    emu,
    gw,
    gatewayUrl,
    keys,
    alice: new Hyperbrowser({ apiKey: keys.alice, baseUrl: gatewayUrl }),
    bob: new Hyperbrowser({ apiKey: keys.bob, baseUrl: gatewayUrl }),
    logs,
    // The control plane's host is the upstream's address too (sandbox details name it in sessionUrl).
    upstreamSecrets: () => [
      emu.apiKey,
      ...runtimeHosts,
      new URL(emu.controlUrl).host,
      `localhost:${new URL(emu.controlUrl).port}`,
      ...seen,
    ],
    clientBytes: () => Buffer.concat(captured).toString("latin1"),
    directRelays: () => relayed.n,
    async close() {
      await gw.close();
      await transport.close();
      await emu.close();
    },
  };
}

/** Raw call through the gateway (127.0.0.1, any Host), for status codes and headers the SDK hides. */
export async function gatewayCall(
  stack: SandboxStack,
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string; host?: string } = {},
) {
  const res = await request(`http://127.0.0.1:${stack.gw.port}${path}`, {
    method: method as any,
    headers: {
      host: init.host ?? `localhost:${stack.gw.port}`,
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(init.headers ?? {}),
    },
    body: init.body,
  });
  const text = await res.body.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** A request to an exposed-port URL the gateway handed out: connect to 127.0.0.1, name the port host in Host. */
export function portCall(
  stack: SandboxStack,
  url: string,
  init: { method?: string; headers?: Record<string, string>; host?: string } = {},
) {
  const u = new URL(url);
  return gatewayCall(stack, init.method ?? "GET", `${u.pathname}${u.search}`, { headers: init.headers, host: init.host ?? u.host });
}
