// WebSocket upgrades on the runtime listener: PTY attach, directory-watch events, and exposed ports.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { UpgradeHandler } from "../types.js";
import { ApiError } from "./errors.js";
import { exposedTarget, PORT_HOST_HEADER, rejectUpgrade, type PortRouter } from "./ports.js";
import type { SandboxService } from "./registry.js";
import type { Sandbox } from "./sandbox.js";
import { bearer, type TokenIssuer } from "./tokens.js";

const PTY_WS = /^\/sandbox\/([^/]+)\/pty\/([^/]+)\/ws$/;
const WATCH_WS = /^\/sandbox\/([^/]+)\/files\/watch\/([^/]+)\/ws$/;

function cursorOf(url: URL): number {
  const raw = url.searchParams.get("cursor");
  const n = raw === null ? 0 : Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ApiError(400, "invalid_request", "cursor must be a non-negative integer");
  return n;
}

function attachPty(ws: WebSocket, sb: Sandbox, ptyId: string, cursor: number): void {
  const t = sb.terminals.get(ptyId);
  const send = (msg: unknown) => ws.readyState === ws.OPEN && ws.send(JSON.stringify(msg));
  for (const chunk of t.since(cursor)) send({ type: "output", ...chunk });
  const finish = () => {
    send({ type: "exit", status: t.status(false) });
    ws.close(1000, "exited");
  };
  if (!t.running) return void t.done.then(finish);
  const unsubscribe = t.subscribe((e) => (e.type === "output" ? send({ type: "output", ...e.chunk }) : finish()));
  ws.on("close", unsubscribe);
  ws.on("message", (raw) => {
    let msg: any;
    try {
      msg = JSON.parse(raw.toString());
    } catch {
      return send({ error: "frames must be JSON", code: "invalid_frame" });
    }
    if (msg?.type === "input" && typeof msg.data === "string")
      t.write(Buffer.from(msg.data, msg.encoding === "base64" ? "base64" : "utf8"));
    else if (msg?.type === "resize") {
      try {
        t.resize(Number(msg.rows), Number(msg.cols));
      } catch (err) {
        send({ error: (err as Error).message, code: "invalid_request" });
      }
    }
  });
}

/**
 * The SDK attaches its message handler only after `await`ing the socket's open: frames that arrive in the same read
 * as the 101 are emitted before it listens and lost (a watch's first event, written right after watchDir returned).
 * The backlog is therefore sent a moment after the upgrade, read then, so nothing that happened meanwhile is missed.
 */
const WATCH_REPLAY_DELAY_MS = 50;

function attachWatch(ws: WebSocket, sb: Sandbox, watchId: string, cursor: number): void {
  const w = sb.watches.get(watchId);
  const timer = setTimeout(() => replayWatch(ws, w, cursor), WATCH_REPLAY_DELAY_MS);
  ws.once("close", () => clearTimeout(timer));
}

function replayWatch(ws: WebSocket, w: ReturnType<Sandbox["watches"]["get"]>, cursor: number): void {
  if (ws.readyState !== ws.OPEN) return;
  const send = (msg: unknown) => ws.readyState === ws.OPEN && ws.send(JSON.stringify(msg));
  const backlog = w.since(cursor);
  if (!backlog) {
    send({ error: "Replay window expired for this watch cursor", code: "replay_window_expired" });
    return void ws.close(1000);
  }
  for (const event of backlog) send({ type: "event", event });
  const finish = () => {
    // The watch's status record, as GET says it (the Python SDK parses it into SandboxFileWatchStatus).
    send({ type: "done", status: w.wire() });
    ws.close(1000, "done");
  };
  if (!w.active) {
    finish();
    return;
  }
  const unsubscribe = w.subscribe((s) => (s.type === "event" ? send(s) : finish()));
  ws.on("close", unsubscribe);
}

export function runtimeUpgrades(
  service: SandboxService,
  tokens: TokenIssuer,
  ports: PortRouter,
): { handle: UpgradeHandler; close(): void } {
  const wss = new WebSocketServer({ noServer: true });
  const handle: UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    let exposed: { port: number; id: string } | undefined;
    try {
      const named = req.headers[PORT_HOST_HEADER];
      exposed = exposedTarget(typeof named === "string" ? named : undefined, req.headers.host);
    } catch (err) {
      rejectUpgrade(socket, err);
      return true;
    }
    if (exposed) {
      ports.upgrade(req, socket, head, exposed);
      return true;
    }
    const url = new URL(req.url ?? "/", "http://runtime.local");
    const pty = PTY_WS.exec(url.pathname);
    const watch = pty ? null : WATCH_WS.exec(url.pathname);
    if (!pty && !watch) return false;
    const id = decodeURIComponent((pty ?? watch)![1]!);
    const sub = decodeURIComponent((pty ?? watch)![2]!);
    (async () => {
      const headers = new Headers();
      if (typeof req.headers.authorization === "string") headers.set("authorization", req.headers.authorization);
      const sb = service.get(id);
      await tokens.verify(bearer(headers), "runtime", sb.id);
      sb.assertActive();
      const cursor = cursorOf(url);
      // Resolve the target before the handshake, so a missing PTY/watch is a clean HTTP 404.
      if (pty) sb.terminals.get(sub);
      else sb.watches.get(sub);
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on("error", () => {});
        if (pty) attachPty(ws, sb, sub, cursor);
        else attachWatch(ws, sb, sub, cursor);
      });
    })().catch((err) => rejectUpgrade(socket, err));
    return true;
  };
  return {
    handle,
    close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}
