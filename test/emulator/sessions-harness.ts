// Starts the emulator with only the sessions half, plus a local page server, for the browser-session tests.
import { createServer, type Server } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { getRequestListener } from "@hono/node-server";
import type { EmulatorContext } from "../../emulator/types.js";
import { createSessionModule } from "../../emulator/sessions/index.js";
import type { BrowserSessions } from "../../emulator/sessions/session-service.js";

export interface SessionsEmulator {
  controlUrl: string;
  apiKey: string;
  sessions: BrowserSessions;
  close(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port));
  });
}

/**
 * The composed emulator (`startEmulator({modules:["sessions"]})`) when every sibling module is present; otherwise the
 * same wiring done here, so this half can be tested while the other halves are still being written.
 */
export async function startSessionsEmulator(): Promise<SessionsEmulator> {
  const composed = "../../emulator/index.js";
  try {
    const { startEmulator } = (await import(/* @vite-ignore */ composed)) as typeof import("../../emulator/index.js");
    const emu = await startEmulator({ modules: ["sessions"] });
    const mod = emu.modules.find((m) => m.name === "sessions") as unknown as { sessions: BrowserSessions };
    return { controlUrl: emu.controlUrl, apiKey: emu.apiKey, sessions: mod.sessions, close: () => emu.close() };
  } catch (err) {
    if (!/Cannot find module|Failed to load|does not provide/i.test(String(err))) throw err;
  }
  const stateDir = await mkdtemp(join(tmpdir(), "tollgate-sessions-test-"));
  let origin = "";
  const ctx: EmulatorContext = {
    apiKey: `emu_${randomBytes(12).toString("base64url")}`,
    controlOrigin: () => origin,
    storageOrigin: () => origin,
    runtimeOrigin: () => origin,
    tokenSecret: randomBytes(32),
    runtimeTokenTtlSeconds: 900,
    stateDir,
    log: () => {},
  };
  const mod = await createSessionModule(ctx);
  const app = new Hono();
  app.route("/", mod.control!);
  app.notFound((c) => c.json({ message: "Not found", code: "not_found" }, 404));
  const server = createServer(getRequestListener(app.fetch));
  server.on("upgrade", (req, socket, head) => {
    if (!mod.upgradeControl?.(req, socket, head)) socket.end("HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n");
  });
  origin = `http://127.0.0.1:${await listen(server)}`;
  return {
    controlUrl: origin,
    apiKey: ctx.apiKey,
    sessions: mod.sessions,
    async close() {
      // Upgraded (WebSocket) sockets keep server.close() pending until the module ends them, so close both together.
      const serverClosed = new Promise((r) => server.close(r));
      server.closeAllConnections();
      await mod.close();
      await serverClosed;
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** Serves fixed HTML pages on 127.0.0.1 for the browser to load. */
export async function startPageServer(pages: Record<string, string>): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const body = pages[req.url ?? "/"];
    res.writeHead(body ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
    res.end(body ?? "not found");
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(base64: string): { width: number; height: number } {
  const png = Buffer.from(base64, "base64");
  if (png.subarray(0, 8).toString("hex") !== "89504e470d0a1a0a" || png.subarray(12, 16).toString() !== "IHDR") {
    throw new Error("not a PNG");
  }
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}
