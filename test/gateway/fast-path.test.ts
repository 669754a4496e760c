// The Node fast path (src/node/fast-path.ts) on real sockets: what reaches the upstream, what comes back, a 401
// replayed once after renewal, a streamed body, and failures as the gateway's JSON errors.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { serve, type ServerType } from "@hono/node-server";
import { request } from "undici";
import { nodeForward, type ForwardDecision } from "../../src/node/fast-path.js";
import { errorResponse } from "../../src/errors.js";

describe("the Node fast path for proxied planes", () => {
  let upstream: Server;
  let upstreamUrl: string;
  let gateway: ServerType;
  let gatewayUrl: string;
  const logged: Array<number | undefined> = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        if (req.url === "/stall") return; // never answers
        if (req.url === "/renew" && req.headers.authorization !== "Bearer fresh") return res.writeHead(401).end('{"message":"stale"}');
        if (req.url === "/stream") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          let n = 0;
          const t = setInterval(() => (n++ < 3 ? res.write(`data: ${n}\n\n`) : (clearInterval(t), res.end())), 20);
          return;
        }
        res.writeHead(201, { "content-type": "application/json", "set-cookie": "up=1", connection: "keep-alive", "x-upstream": "yes" });
        res.end(
          JSON.stringify({
            method: req.method,
            url: req.url,
            auth: req.headers.authorization ?? null,
            host: req.headers.host,
            body: Buffer.concat(chunks).toString(),
          }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

    const app = new Hono<{ Variables: { logFields: Record<string, unknown> } }>();
    app.onError((err) => errorResponse(err, "req-1"));
    app.use(async (c, next) => {
      c.set("logFields", {});
      await next();
      logged.push(c.get("logFields").status as number | undefined);
    });
    app.all("*", async (c) => {
      const path = new URL(c.req.url).pathname;
      const decision: ForwardDecision = {
        url: `${upstreamUrl}${path}`,
        method: c.req.method,
        headers: {
          authorization: "Bearer old",
          "x-request-id": "req-1",
          ...(c.req.header("content-length") ? { "content-length": c.req.header("content-length")! } : {}),
        },
        body: c.req.method === "GET" ? null : "client",
        responseHeaders: { "x-request-id": "req-1" },
        headersTimeoutMs: 300,
      };
      if (path === "/renew") {
        decision.body = null;
        decision.onUnauthorized = async () => ({ ...decision, headers: { ...decision.headers, authorization: "Bearer fresh" } });
      }
      if (path === "/unreachable") decision.url = "http://127.0.0.1:1/x";
      return nodeForward(c, decision);
    });
    gateway = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
    });
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((r) => gateway.close(r));
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it("sends the decided headers and the client's body, and passes the answer back minus hop-by-hop and set-cookie", async () => {
    const res = await request(`${gatewayUrl}/run?x=1`, {
      method: "POST",
      body: '{"cmd":"ls"}',
      headers: { "content-type": "application/json" },
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers["x-upstream"]).toBe("yes");
    expect(res.headers["x-request-id"]).toBe("req-1");
    expect(res.headers["set-cookie"]).toBeUndefined();
    const body = (await res.body.json()) as any;
    expect(body).toMatchObject({ method: "POST", url: "/run", auth: "Bearer old", body: '{"cmd":"ls"}' });
    expect(logged.at(-1)).toBe(201);
  });

  it("replays once with the renewed credential on a 401", async () => {
    const res = await request(`${gatewayUrl}/renew`);
    expect(res.statusCode).toBe(201);
    expect(((await res.body.json()) as any).auth).toBe("Bearer fresh");
  });

  it("streams a body as it comes", async () => {
    const res = await request(`${gatewayUrl}/stream`);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    const seen: number[] = [];
    const t0 = performance.now();
    for await (const _ of res.body) seen.push(performance.now() - t0);
    expect(seen.length).toBeGreaterThanOrEqual(2);
  });

  it("answers 504 JSON when the upstream sends no headers in time, 502 when it cannot be reached", async () => {
    const slow = await request(`${gatewayUrl}/stall`);
    expect(slow.statusCode).toBe(504);
    expect(((await slow.body.json()) as any).code).toBe("upstream_timeout");
    const down = await request(`${gatewayUrl}/unreachable`);
    expect(down.statusCode).toBe(502);
    expect(((await down.body.json()) as any).code).toBe("upstream_unavailable");
  });
});
