// The Node WebSocket relay on real sockets: frames both ways, subprotocol agreement, refusals with their JSON.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { Hono } from "hono";
import { serve, type ServerType } from "@hono/node-server";
import { nodeWebSocketRelay, relayWebSocketServer } from "../../src/host/node/ws-relay.js";

describe("the Node WebSocket relay", () => {
  let upstream: Server;
  let upstreamUrl: string;
  let gateway: ServerType;
  let gatewayUrl: string;

  beforeAll(async () => {
    upstream = createServer((_req, res) => res.writeHead(404).end());
    const uwss = new WebSocketServer({
      noServer: true,
      // The upstream prefers chat.v2 when offered, whatever the order.
      handleProtocols: (offered) => (offered.has("chat.v2") ? "chat.v2" : false),
    });
    upstream.on("upgrade", (req, socket, head) => {
      if (req.url?.startsWith("/refuse")) {
        socket.end(
          'HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: 38\r\n\r\n{"message":"no entry","code":"denied"}',
        );
        return;
      }
      uwss.handleUpgrade(req, socket, head, (ws) => ws.on("message", (d, bin) => ws.send(bin ? d : `echo:${d}`, { binary: bin })));
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    upstreamUrl = `ws://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

    const relay = nodeWebSocketRelay();
    const app = new Hono();
    app.get("/ws/:path", (c) => relay(c, { url: `${upstreamUrl}/${c.req.param("path")}`, headers: {} }));
    gateway = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0, websocket: { server: relayWebSocketServer() } }, () =>
        resolve(s),
      );
    });
    gatewayUrl = `ws://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    (gateway as Server)?.closeAllConnections?.();
    await new Promise((r) => gateway?.close(r));
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
  });

  const open = (url: string, protocols?: string[]) =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(url, protocols);
      ws.once("open", () => resolve(ws));
      ws.once("error", reject);
    });

  it("relays text and binary frames both ways", async () => {
    const ws = await open(`${gatewayUrl}/ws/echo`);
    const got: string[] = [];
    const done = new Promise<void>((r) =>
      ws.on("message", (d, bin) => (got.push(bin ? `bin:${(d as Buffer).length}` : String(d)), got.length === 2 && r())),
    );
    ws.send("hello");
    ws.send(Buffer.alloc(70_000, 1));
    await done;
    expect(got).toEqual(["echo:hello", "bin:70000"]);
    ws.close();
  });

  it("answers the client with the subprotocol the upstream chose", async () => {
    const ws = await open(`${gatewayUrl}/ws/echo`, ["chat.v1", "chat.v2"]);
    expect(ws.protocol).toBe("chat.v2");
    ws.close();
  });

  it("passes an upstream refusal back with its status and JSON body", async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve) => {
      const ws = new WebSocket(`${gatewayUrl}/ws/refuse`);
      ws.once("unexpected-response", (_req, r) => {
        let body = "";
        r.on("data", (d) => (body += d));
        r.on("end", () => resolve({ status: r.statusCode ?? 0, body }));
      });
      ws.once("error", () => {});
    });
    expect(res.status).toBe(403);
  });
});
