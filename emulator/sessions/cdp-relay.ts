// The public `wsEndpoint`: checks the session token on the upgrade, then relays CDP frames to the session's browser.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import WebSocket, { WebSocketServer } from "ws";
import type { EmulatorContext, UpgradeHandler } from "../types.js";
import { verifySessionToken } from "./access-token.js";
import type { BrowserSessions } from "./session-service.js";

const PATH = /^\/devtools\/browser\/([A-Za-z0-9-]+)\/?$/;
const MAX_FRAME = 256 * 1024 * 1024;

const REASONS: Record<number, string> = { 401: "Unauthorized", 404: "Not Found", 409: "Conflict", 502: "Bad Gateway" };

function refuse(socket: Duplex, status: number, message: string, code: string): void {
  const body = JSON.stringify({ message, code });
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Whether a client's CDP frame is `Browser.close` (read only when the bytes could be; a frame is one JSON command). */
function isBrowserClose(data: WebSocket.RawData): boolean {
  const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
  if (buf.length > 4096 || !buf.includes("Browser.close")) return false;
  try {
    return (JSON.parse(buf.toString("utf8")) as { method?: unknown }).method === "Browser.close";
  } catch {
    return false;
  }
}

export interface CdpRelay {
  upgrade: UpgradeHandler;
  close(): void;
}

export function createCdpRelay(ctx: EmulatorContext, sessions: BrowserSessions): CdpRelay {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_FRAME });
  const open = new Map<string, Set<WebSocket>>();

  sessions.onEnd((id) => {
    for (const ws of open.get(id) ?? []) ws.close(1001, "session ended");
  });

  function pipe(sessionId: string, client: WebSocket, browser: WebSocket): void {
    const set = open.get(sessionId) ?? new Set<WebSocket>();
    open.set(sessionId, set);
    set.add(client);
    client.on("message", (data, isBinary) => {
      if (!isBinary && isBrowserClose(data)) sessions.clientClosedBrowser(sessionId);
      if (browser.readyState === WebSocket.OPEN) browser.send(data, { binary: isBinary });
    });
    browser.on("message", (data, isBinary) => client.readyState === WebSocket.OPEN && client.send(data, { binary: isBinary }));
    const teardown = () => {
      set.delete(client);
      if (set.size === 0) open.delete(sessionId);
      if (client.readyState === WebSocket.OPEN) client.close(1000);
      if (browser.readyState === WebSocket.OPEN || browser.readyState === WebSocket.CONNECTING) browser.terminate();
    };
    client.on("close", teardown).on("error", teardown);
    browser.on("close", teardown).on("error", teardown);
  }

  async function accept(req: IncomingMessage, socket: Duplex, head: Buffer, sessionId: string, token: string | null) {
    const record = sessions.record(sessionId);
    if (!record) return refuse(socket, 404, `Session ${sessionId} not found`, "session_not_found");
    if (!(await verifySessionToken(ctx.tokenSecret, sessionId, token))) {
      return refuse(socket, 401, token ? "Invalid session token" : "Missing session token", "unauthorized");
    }
    const target = record.browser?.cdpUrl;
    if (record.status !== "active" || !target) return refuse(socket, 409, `Session ${sessionId} is ${record.status}`, "session_not_active");
    const browser = new WebSocket(target, { perMessageDeflate: false, maxPayload: MAX_FRAME });
    browser.once("error", () => refuse(socket, 502, "The session's browser is not reachable", "browser_unreachable"));
    browser.once("open", () => {
      browser.removeAllListeners("error");
      if (socket.destroyed) return browser.terminate();
      wss.handleUpgrade(req, socket, head, (client) => pipe(sessionId, client, browser));
    });
  }

  return {
    upgrade(req, socket, head) {
      const url = new URL(req.url ?? "/", "http://emulator");
      const m = PATH.exec(url.pathname);
      if (!m) return false;
      socket.on("error", () => socket.destroy());
      accept(req, socket, head, m[1], url.searchParams.get("token")).catch((err) => {
        ctx.log("session.relay.error", { error: String(err) });
        if (!socket.destroyed) refuse(socket, 502, "CDP relay failed", "relay_failed");
      });
      return true;
    },
    close() {
      for (const set of open.values()) for (const ws of set) ws.terminate();
      open.clear();
      wss.close();
    },
  };
}
