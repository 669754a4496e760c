// Node WebSocket relay: connects upstream with `ws` first, then accepts the client and pipes frames both ways.
import WebSocket, { WebSocketServer } from "ws";
import type { IncomingMessage } from "node:http";
import { upgradeWebSocket } from "@hono/node-server";
import type { RelayTap, WebSocketRelay } from "../../web/websocket.js";
import type { GatewayMetrics } from "../../telemetry/gateway-metrics.js";
import { webSocketKindOf } from "../../telemetry/metric-labels.js";

/** The subprotocol the upstream chose, left on the client's request so our handshake answers the same one. */
const CHOSEN_PROTOCOL = Symbol("tollgate.chosenProtocol");

/**
 * The server side of the relay: answers the client's handshake with the subprotocol the upstream accepted (none if it
 * accepted none), so both ends of the relay agree.
 */
export function relayWebSocketServer(): WebSocketServer {
  return new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 256 * 1024 * 1024,
    handleProtocols: (_offered, req) => (req as IncomingMessage & { [CHOSEN_PROTOCOL]?: string })[CHOSEN_PROTOCOL] || false,
  });
}

interface Handshake {
  socket?: WebSocket;
  status?: number;
  body?: string;
}

function connectUpstream(url: string, headers: Record<string, string>, timeoutMs: number, protocols: string[]): Promise<Handshake> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols.length ? protocols : undefined, {
      headers,
      perMessageDeflate: false,
      handshakeTimeout: timeoutMs,
      maxPayload: 256 * 1024 * 1024,
    });
    ws.once("open", () => resolve({ socket: ws }));
    ws.once("unexpected-response", (_req, res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("end", () => resolve({ status: res.statusCode ?? 502, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", () => resolve({ status: res.statusCode ?? 502 }));
    });
    ws.once("error", () => resolve({ status: 502 }));
  });
}

export function nodeWebSocketRelay(
  opts: { handshakeTimeoutMs?: number; recheckMs?: number; metrics?: GatewayMetrics } = {},
): WebSocketRelay {
  const relay: WebSocketRelay = async (c, target) => {
    const protocols = (c.req.header("sec-websocket-protocol") ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    const hs = await connectUpstream(target.url, target.headers, opts.handshakeTimeoutMs ?? 15_000, protocols);
    if (!hs.socket) {
      let body = hs.body;
      try {
        if (body) JSON.parse(body);
      } catch {
        body = undefined;
      }
      body ??= JSON.stringify({ message: "The upstream refused the WebSocket connection.", code: "upstream_ws_refused" });
      return new Response(body, { status: hs.status === 101 ? 502 : (hs.status ?? 502), headers: { "content-type": "application/json" } });
    }
    const up = hs.socket;
    const incoming = (c.env as { incoming?: IncomingMessage & { [CHOSEN_PROTOCOL]?: string } } | undefined)?.incoming;
    if (incoming) incoming[CHOSEN_PROTOCOL] = up.protocol;
    let recheck: ReturnType<typeof setInterval> | undefined;
    let closed: (() => void) | undefined;
    let tap: RelayTap | undefined;
    let tapEnded = false;
    const endTap = () => {
      if (tap && !tapEnded) {
        tapEnded = true;
        tap.closed();
      }
    };
    const handler = upgradeWebSocket(() => ({
      onOpen(_evt, client) {
        closed = opts.metrics?.webSocketOpened(webSocketKindOf(c.req.path));
        if (target.stillValid) {
          const stillValid = target.stillValid;
          recheck = setInterval(() => {
            stillValid().then(
              (ok) => {
                if (ok) return;
                clearInterval(recheck);
                try {
                  client.close(4401, "token revoked or expired");
                } catch {
                  /* gone */
                }
                up.close(1000);
              },
              () => {
                /* state store unreachable: keep the connection, check again next time */
              },
            );
          }, opts.recheckMs ?? 2000);
          recheck.unref?.();
        }
        const raw = client.raw as import("@hono/node-server").WebSocketLike;
        tap = target.tap?.({
          toUpstream: (m) => {
            if (up.readyState === WebSocket.OPEN) up.send(m);
          },
          toClient: (m) => {
            if (client.readyState === 1) client.send(m);
          },
          close: (code, reason) => {
            try {
              client.close(code, reason);
            } catch {
              /* gone */
            }
            up.close(1000);
          },
        });
        up.on("message", (data, isBinary) => {
          if (tap && !isBinary) return tap.fromUpstream(data.toString());
          if (client.readyState === 1) client.send(isBinary ? (data as Uint8Array<ArrayBuffer>) : data.toString());
        });
        up.on("close", (code, reason) => {
          clearInterval(recheck);
          endTap();
          try {
            client.close(code >= 1000 && code < 5000 && code !== 1005 && code !== 1006 ? code : 1000, reason.toString());
          } catch {
            /* gone */
          }
        });
        up.on("error", () => {
          try {
            client.close(1011, "upstream error");
          } catch {
            /* gone */
          }
        });
        void raw;
      },
      onMessage(evt, client) {
        if (up.readyState !== WebSocket.OPEN) return;
        const d = evt.data;
        if (tap) {
          if (typeof d === "string") tap.fromClient(d);
          return;
        }
        if (target.screen) {
          if (typeof d !== "string") return;
          const verdict = target.screen(d);
          if ("forward" in verdict) up.send(verdict.forward);
          else if (client.readyState === 1) client.send(verdict.reply);
          return;
        }
        if (typeof d === "string") up.send(d);
        else if (d instanceof ArrayBuffer) up.send(Buffer.from(d), { binary: true });
        else up.send(d, { binary: true });
      },
      onClose() {
        closed?.();
        clearInterval(recheck);
        endTap();
        if (up.readyState === WebSocket.OPEN || up.readyState === WebSocket.CONNECTING) up.close();
      },
      onError() {
        closed?.();
        endTap();
        up.terminate();
      },
    }));
    const res = await handler(c, async () => {});
    return res ?? new Response(null, { status: 500 });
  };
  // `ws` sends the `host` header it is given (an exposed port of a local emulator, named through the runtime origin).
  return Object.assign(relay, { setsHost: true });
}
