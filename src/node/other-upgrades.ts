// Requests asking to upgrade to anything but WebSocket (`Upgrade: h2c` from curl --http2, or junk) are served as the
// plain HTTP/1.1 requests they also are. Node hands every Upgrade request to the 'upgrade' listeners, and
// @hono/node-server's listener ignores non-WebSocket ones, which left such sockets open and unanswered forever.
import { ServerResponse, type IncomingMessage, type Server } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

const refusal = (message: string) => {
  const body = JSON.stringify({ message, code: "upgrade_not_supported" });
  return `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
};

/**
 * Keeps one 'upgrade' listener (node-server counts them to decide who rejects a failed WebSocket handshake): WebSocket
 * upgrades go to the existing listeners, others become a normal request on that socket, answered and then closed.
 */
export function serveOtherUpgradesAsRequests(server: Server): void {
  const webSocketListeners = server.listeners("upgrade") as UpgradeListener[];
  server.removeAllListeners("upgrade");
  server.on("upgrade", function upgradeOnlyToWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer) {
    if ((req.headers.upgrade ?? "").toLowerCase() === "websocket") {
      for (const l of webSocketListeners) l.call(server, req, socket, head);
      return;
    }
    socket.on("error", () => {});
    // The parser has let go of the socket: a body after the headers cannot be read as one, so only bodiless requests pass.
    const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
    if (hasBody || head.length) {
      socket.end(refusal("Upgrade is only supported to WebSocket; send this request without the Upgrade header."));
      return;
    }
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.once("finish", () => {
      res.detachSocket(socket as Socket);
      socket.end();
    });
    server.emit("request", req, res);
  });
}
