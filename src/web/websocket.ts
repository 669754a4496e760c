// WebSocket relaying behind one small interface: Node relays frames with `ws`, Workers hand the upstream socket through.
import type { Context } from "hono";
import { foreignHost, UnsentHost } from "./transport.js";

interface WebSocketRelayTarget {
  /** ws:// or wss:// URL of the upstream socket (already checked against the allowed hosts). */
  url: string;
  /** Headers for the upstream handshake (e.g. the injected runtime bearer). */
  headers: Record<string, string>;
  /**
   * Re-checked while the connection is open (Node relay): once it answers false (token revoked or expired), both
   * sides are closed with code 4401. Workers hand the socket through and cannot cut it; there, tokens should be short.
   */
  stillValid?: () => Promise<boolean>;
  /**
   * Screens each client message (the live view's CDP allow-list): a text message is forwarded as `forward`, or not at
   * all and `reply` is sent back to the client instead; binary client messages are dropped. Relays that hand the
   * socket through (Workers' fetchWebSocketRelay) cannot screen; given a filter they bridge the two sockets instead.
   */
  screen?: (message: string) => { forward: string } | { reply: string };
  /**
   * Sits on the relay (the CDP guard, src/sessions/cdp-guard.ts): every text message either way goes to the tap, which
   * forwards, answers, drops or adds messages of its own through `io`. Binary client messages are dropped; binary
   * upstream messages pass. Relays that hand the socket through bridge the two sockets instead, as with `screen`.
   */
  tap?: (io: RelayIo) => RelayTap;
}

/** What a tap may do on the relay. */
export interface RelayIo {
  toUpstream(message: string): void;
  toClient(message: string): void;
  /** Closes both sides (the client with `code` and `reason`). */
  close(code: number, reason: string): void;
}

/** A tap's side of the relay: it hears each text message, and when the relay ends. */
export interface RelayTap {
  fromClient(message: string): void;
  fromUpstream(message: string): void;
  closed(): void;
}

/**
 * Relays the client's WebSocket upgrade at `c` to the upstream target. When the upstream refuses the handshake,
 * its status and JSON error are returned to the client as an ordinary HTTP response.
 */
export type WebSocketRelay = ((c: Context, target: WebSocketRelayTarget) => Promise<Response>) & {
  /** The relay sends a `host` header as given (Node's `ws`); absent, it refuses one that is not the URL's own host. */
  readonly setsHost?: boolean;
};

export function isWebSocketUpgrade(req: Request): boolean {
  return (req.headers.get("upgrade") ?? "").toLowerCase() === "websocket";
}

/**
 * Workers: fetch with `Upgrade: websocket` returns a 101. A target with a `screen`, a `tap` or a `stillValid` is bridged
 * (a WebSocketPair: each client message screened or tapped, stillValid rechecked every 2 s so the socket closes with its
 * credential: revoked, expired, or its parent gone); only a target with none of them hands the socket over unchanged.
 */
export const fetchWebSocketRelay: WebSocketRelay = async (_c, target) => {
  const url = target.url.replace(/^ws/, "http");
  // fetch sends the URL's own host whatever `host` says: refused rather than sent to the wrong place (UnsentHost).
  const host = foreignHost(url, target.headers);
  if (host !== undefined) throw new UnsentHost(host, url);
  const res = await fetch(url, { headers: { ...target.headers, Upgrade: "websocket" } });
  if (res.status !== 101) {
    const headers = new Headers({ "content-type": res.headers.get("content-type") ?? "application/json" });
    return new Response(res.body, { status: res.status, headers });
  }
  return target.screen || target.tap || target.stillValid ? bridge(res, target) : res;
};

/** Workers' socket API, the part a bridge uses (typed here: the core compiles without the Workers types). */
interface WorkerSocket {
  accept(): void;
  send(data: string | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", fn: (e: { data: string | ArrayBuffer }) => void): void;
  addEventListener(type: "close", fn: (e: { code: number; reason: string }) => void): void;
  addEventListener(type: "error", fn: () => void): void;
}
type WorkersRuntime = { WebSocketPair?: new () => Record<0 | 1, WorkerSocket> };

function bridge(upstreamRes: Response, target: WebSocketRelayTarget): Response {
  const Pair = (globalThis as WorkersRuntime).WebSocketPair;
  const up = (upstreamRes as Response & { webSocket?: WorkerSocket | null }).webSocket;
  if (!Pair || !up) {
    const body = JSON.stringify({ message: "This runtime cannot screen a WebSocket relay.", code: "websocket_unsupported" });
    return new Response(body, { status: 501, headers: { "content-type": "application/json" } });
  }
  const pair = new Pair();
  const [client, server] = [pair[0], pair[1]];
  up.accept();
  server.accept();
  let ended = false;
  const closeBoth = (code = 1000, reason = "") => {
    clearInterval(recheck);
    if (!ended) {
      ended = true;
      tap?.closed();
    }
    for (const s of [server, up])
      try {
        s.close(code, reason);
      } catch {
        /* already closed */
      }
  };
  const stillValid = target.stillValid;
  const recheck = stillValid
    ? setInterval(() => {
        stillValid().then(
          (ok) => ok || closeBoth(4401, "token revoked or expired"),
          () => {},
        );
      }, 2000)
    : undefined;
  const send = (s: WorkerSocket, m: string | ArrayBuffer) => {
    try {
      s.send(m);
    } catch {
      /* closing */
    }
  };
  const tap = target.tap?.({
    toUpstream: (m) => send(up, m),
    toClient: (m) => send(server, m),
    close: (code, reason) => closeBoth(code, reason),
  });
  server.addEventListener("message", (e) => {
    if (!tap && !target.screen) return send(up, e.data);
    if (typeof e.data !== "string") return;
    if (tap) return tap.fromClient(e.data);
    const verdict = target.screen!(e.data);
    if ("forward" in verdict) up.send(verdict.forward);
    else server.send(verdict.reply);
  });
  up.addEventListener("message", (e) => (tap && typeof e.data === "string" ? tap.fromUpstream(e.data) : server.send(e.data)));
  up.addEventListener("close", (e) =>
    closeBoth(e.code >= 1000 && e.code < 5000 && e.code !== 1005 && e.code !== 1006 ? e.code : 1000, e.reason),
  );
  server.addEventListener("close", () => closeBoth());
  up.addEventListener("error", () => closeBoth(1011, "upstream error"));
  server.addEventListener("error", () => closeBoth());
  return new Response(null, { status: 101, webSocket: client } as ResponseInit);
}
