// The gates in front of @hono/node-server's listeners. A request whose Host makes no URL (`a b`, `x:99999`, `[zz]`)
// is the client's JSON 400 invalid_host before node-server sees it (it answered an empty 400, its Request cannot be
// built). And the 'upgrade' listener: Requests asking to upgrade to anything but WebSocket
// (`Upgrade: h2c` from curl --http2, or junk) are served as the plain HTTP/1.1 requests they also are: node-server
// ignores them, which left such sockets open and unanswered forever. A WebSocket upgrade whose Host makes no URL
// (`host:99999`) is the client's 400 here; node-server's URL building threw on it and answered a bare 500.
import { ServerResponse, type IncomingMessage, type Server } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { originParses } from "../../web/request-url.js";

type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

const refusal = (message: string, code = "upgrade_not_supported") => {
  const body = JSON.stringify({ message, code });
  return `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
};

/** undefined: node-server falls back to localhost. Parsed once per Host (a connection sends the same one each time). */
const hostMakesUrl = (host: string | undefined): boolean => host === undefined || originParses(`http://${host}`);

/**
 * Keeps one 'upgrade' listener (node-server counts them to decide who rejects a failed WebSocket handshake): WebSocket
 * upgrades go to the existing listeners, others become a normal request on that socket, answered and then closed.
 */
export function gateUpgrades(server: Server): void {
  const webSocketListeners = server.listeners("upgrade") as UpgradeListener[];
  server.removeAllListeners("upgrade");
  server.on("upgrade", function upgradeOnlyToWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on("error", () => {});
    if ((req.headers.upgrade ?? "").toLowerCase() === "websocket") {
      if (!hostMakesUrl(req.headers.host)) {
        socket.end(refusal("The Host header is not a valid host name.", "invalid_host"));
        return;
      }
      for (const l of webSocketListeners) l.call(server, req, socket, head);
      return;
    }
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

/** Answers a request whose Host makes no URL with a JSON 400, before node-server tries to build its Request. */
export function gateHosts(server: Server): void {
  const listeners = server.listeners("request") as RequestListener[];
  server.removeAllListeners("request");
  server.on("request", function hostMakesUrlOrRefuse(req: IncomingMessage, res: ServerResponse) {
    if (!hostMakesUrl(req.headers.host)) {
      const body = JSON.stringify({ message: "The Host header is not a valid host name.", code: "invalid_host" });
      res.writeHead(400, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    for (const l of listeners) l.call(server, req, res);
  });
}
