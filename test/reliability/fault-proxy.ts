// A real HTTP proxy in front of the emulator's control plane that can be told, at any moment, to misbehave the way
// networks and upstreams do: reset a response mid-stream, answer slower than the gateway waits, answer 5xx, or refuse
// connections. It also keeps the paths it forwarded, so a test can tell what reached the upstream.
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type Fault =
  | { kind: "none" }
  /** Forward, relay the status and headers and part of the body, then destroy both sockets. */
  | { kind: "reset-mid-stream" }
  /** Forward, then hold the answer for `ms` (past the gateway's upstream timeout). */
  | { kind: "slow"; ms: number }
  /** Answer this status without forwarding. */
  | { kind: "status"; status: 500 | 502 | 503 | 504 }
  /** Accept and destroy the connection at once (ECONNRESET before any answer). */
  | { kind: "reset" };

/** Which requests a fault applies to: a path pattern, and/or only those carrying a payment signature. */
export interface FaultScope {
  path?: RegExp;
  paid?: boolean;
}

export interface FaultProxy {
  url: string;
  /** Sets the fault for the requests in `scope` (all when unset) from now on. */
  set(fault: Fault, scope?: FaultScope): void;
  /** Nonces of every payment authorization that came through (signed by the gateway), forwarded or not. */
  nonces(): Set<string>;
  /** Paths forwarded to the upstream, oldest first (capped). */
  forwarded(): string[];
  /** Requests the current fault has been applied to. */
  faulted(): number;
  close(): Promise<void>;
}

const KEEP_PATHS = 50_000;

function paymentHeader(req: IncomingMessage): string | undefined {
  const h = req.headers["payment-signature"] ?? req.headers["x-payment"];
  return Array.isArray(h) ? h[0] : h;
}

/** The EIP-3009 nonce inside an x402 payment header (base64 JSON, v1 or v2). */
function nonceOf(header: string): string | undefined {
  try {
    const p = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
    const n = p?.payload?.authorization?.nonce;
    return typeof n === "string" ? n.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const t = new URL(target);
  let fault: Fault = { kind: "none" };
  let scope: FaultScope = {};
  let faulted = 0;
  const nonces = new Set<string>();
  const paths: string[] = [];
  const sockets = new Set<Socket>();

  const forward = (req: IncomingMessage, res: ServerResponse, onAnswer: (up: IncomingMessage) => void) => {
    if (paths.length < KEEP_PATHS) paths.push(req.url ?? "");
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, onAnswer);
    up.on("error", () => res.destroy());
    req.pipe(up);
  };

  const server = createServer((req, res) => {
    const signature = paymentHeader(req);
    const nonce = signature ? nonceOf(signature) : undefined;
    if (nonce) nonces.add(nonce);
    const applies = fault.kind !== "none" && (!scope.path || scope.path.test(req.url ?? "")) && (!scope.paid || !!signature);
    const f = applies ? fault : { kind: "none" as const };
    if (applies) faulted++;
    switch (f.kind) {
      case "reset":
        req.socket.destroy();
        return;
      case "status":
        req.resume();
        res
          .writeHead(f.status, { "content-type": "application/json" })
          .end(JSON.stringify({ message: "injected upstream failure", code: "injected" }));
        return;
      case "slow":
        forward(req, res, (up) => {
          setTimeout(() => {
            if (res.destroyed) return up.resume();
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          }, f.ms);
        });
        return;
      case "reset-mid-stream":
        forward(req, res, (up) => {
          const headers = { ...up.headers };
          delete headers["content-length"];
          res.writeHead(up.statusCode ?? 502, headers);
          up.once("data", (chunk: Buffer) => {
            res.write(chunk.subarray(0, Math.max(1, chunk.length >> 1)));
            setTimeout(() => {
              up.destroy();
              res.socket?.destroy();
            }, 10);
          });
        });
        return;
      default:
        forward(req, res, (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        });
    }
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set(next, within = {}) {
      fault = next;
      scope = within;
      faulted = 0;
    },
    nonces: () => new Set(nonces),
    forwarded: () => [...paths],
    faulted: () => faulted,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
