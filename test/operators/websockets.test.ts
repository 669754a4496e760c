// Open WebSockets by kind: the Node relay counts each relayed socket while it is open, over real sockets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { Hono } from "hono";
import { serve, type ServerType } from "@hono/node-server";
import { nodeWebSocketRelay, relayWebSocketServer } from "../../src/host/node/ws-relay.js";
import { GatewayMetrics } from "../../src/telemetry/gateway-metrics.js";
import { promRegistry } from "../../src/host/node/prom-registry.js";
import { parseExposition, sampleSum } from "./prometheus.js";

describe("tollgate_websockets_open (Node relay)", () => {
  let upstream: Server;
  let uwss: WebSocketServer;
  let gateway: ServerType;
  let gatewayUrl: string;
  const metrics = new GatewayMetrics(promRegistry({ defaultMetrics: false }));

  beforeAll(async () => {
    upstream = createServer((_req, res) => res.writeHead(404).end());
    uwss = new WebSocketServer({ noServer: true });
    upstream.on("upgrade", (req, socket, head) =>
      uwss.handleUpgrade(req, socket, head, (ws) => ws.on("message", (d) => ws.send(`echo:${d}`))),
    );
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    const upstreamUrl = `ws://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const relay = nodeWebSocketRelay({ metrics });
    const app = new Hono();
    // The kind comes from the path the client used, as on the gateway: /devtools → cdp, /sandbox → runtime.
    app.get("/devtools/browser/:id", (c) => relay(c, { url: `${upstreamUrl}/cdp`, headers: {} }));
    app.get("/sandbox/:id/terminal", (c) => relay(c, { url: `${upstreamUrl}/pty`, headers: {} }));
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

  const open = (path: string) =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(gatewayUrl + path);
      ws.once("open", () => resolve(ws));
      ws.once("error", reject);
    });
  const openNow = async (kind: string) => sampleSum(parseExposition(await metrics.render()), "tollgate_websockets_open", { kind });
  async function eventually(kind: string, want: number) {
    for (let i = 0; i < 50 && (await openNow(kind)) !== want; i++) await new Promise((r) => setTimeout(r, 50));
    return openNow(kind);
  }

  it("counts relays while they are open, by kind, and forgets them once closed from either side", async () => {
    const a = await open("/devtools/browser/b1");
    const b = await open("/devtools/browser/b2");
    const t = await open("/sandbox/s1/terminal");
    // A frame round trip: the relay is fully open.
    await new Promise<void>((r) => (t.once("message", () => r()), t.send("hi")));
    expect(await eventually("cdp", 2)).toBe(2);
    expect(await eventually("runtime", 1)).toBe(1);
    a.close();
    expect(await eventually("cdp", 1)).toBe(1);
    // The upstream goes away (every upstream socket is cut): the relay closes its clients and stops counting them.
    const clientsClosed = Promise.all([b, t].map((ws) => new Promise((r) => ws.once("close", r))));
    for (const ws of uwss.clients) ws.terminate();
    await clientsClosed;
    expect(await eventually("cdp", 0)).toBe(0);
    expect(await eventually("runtime", 0)).toBe(0);
    expect(sampleSum(parseExposition(await metrics.render()), "tollgate_websockets_total", { kind: "cdp" })).toBe(2);
  });
});
