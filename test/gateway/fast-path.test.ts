// The Node fast path (src/host/node/direct-relay.ts behind `Upstream.forward`) on real sockets: what reaches the upstream,
// what comes back (with the headers the chain adds after the handler), a 401 discarded and replayed, streams both
// ways, a client that goes away, an answer replaced by an error after the handler, a kept-alive socket the upstream
// closed, and failures as the gateway's JSON errors. The gateway's own suites (sandboxes, ports, files) run through
// it too: the Node entry has it on by default.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { serve, type ServerType } from "@hono/node-server";
import { request } from "undici";
import { parseConfig } from "../../config/load.js";
import { errorResponse, GatewayError } from "../../src/errors.js";
import { Upstream } from "../../src/upstream/upstream.js";
import { undiciTransport } from "../../src/host/node/undici-transport.js";
import { withDirectRelays } from "../../src/host/node/direct-relay.js";
import { requestId } from "../../middleware/request-id/index.js";

describe("the Node fast path for proxied planes", () => {
  let upstream: Server;
  let upstreamUrl: string;
  let gateway: ServerType;
  let gatewayUrl: string;
  let unwrapped: ServerType;
  let unwrappedUrl: string;
  const transport = undiciTransport({ headersTimeoutMs: 300 });
  const seen: Array<{ url?: string; auth?: string; te?: string; len?: string; body: string }> = [];
  let clientGoneAt = 0;
  let upstreamSawClose = 0;
  const logged: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const served = new WeakMap<object, number>();
    upstream = createServer((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      // As an upstream closing an idle kept-alive socket at the moment it is reused: no answer, the socket reset.
      if (req.url === "/reset-on-reuse" && n > 1) return req.socket.destroy();
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        seen.push({
          url: req.url,
          auth: req.headers.authorization,
          te: req.headers["transfer-encoding"],
          len: req.headers["content-length"],
          body: Buffer.concat(chunks).toString(),
        });
        if (req.url === "/stall") return; // never answers
        if (req.url === "/hang-until-close") {
          res.on("close", () => {
            upstreamSawClose = performance.now();
          });
          return;
        }
        if (req.url === "/renew" && req.headers.authorization !== "Bearer fresh") return res.writeHead(401).end('{"message":"stale"}');
        if (req.url === "/stream") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          let n = 0;
          const t = setInterval(() => (n++ < 3 ? res.write(`data: ${n}\n\n`) : (clearInterval(t), res.end())), 20);
          return;
        }
        res.writeHead(201, [
          ["content-type", "application/json"],
          ["set-cookie", "a=1"],
          ["set-cookie", "b=2"],
          ["connection", "keep-alive"],
          ["x-upstream", "yes"],
        ] as unknown as Record<string, string>);
        res.end(JSON.stringify({ method: req.method, url: req.url, auth: req.headers.authorization ?? null }));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

    const config = parseConfig({ upstream: { baseUrl: upstreamUrl, timeoutMs: 300 } });
    const up = new Upstream(config.upstream, transport, "key");
    const app = new Hono();
    app.onError((err, c) => errorResponse(err, c.get("requestId")));
    app.use(requestId());
    app.use(async (c, next) => {
      c.set("logFields", {} as never);
      await next();
      c.res.headers.set("ratelimit-remaining", "7"); // as the rate limit does, after the handler
      logged.push({ status: c.res.status, ...(c.get("logFields") as object) });
    });
    app.use("/fail-after/*", async (_c, next) => {
      await next();
      throw new GatewayError(409, "conflict", "replaced after the handler");
    });
    app.use("/peek/*", async (c, next) => {
      void c.res; // Hono copies the handler's Response when c.res was looked at before it
      await next();
    });
    app.all("*", async (c) => {
      const path = new URL(c.req.url).pathname;
      const headers = new Headers({ authorization: "Bearer old" });
      const body =
        c.req.method === "GET" ? null : c.req.header("content-length") ? new Uint8Array(await c.req.arrayBuffer()) : c.req.raw.body;
      if (path === "/unreachable")
        return up.forward(c, { url: "http://127.0.0.1:1/x", method: "GET", headers }, { unavailableMessage: "runtime away" });
      let res = await up.forward(
        c,
        { url: `${upstreamUrl}${path.replace(/^\/(peek|fail-after)/, "")}`, method: c.req.method, headers, body },
        {
          keepSetCookie: path === "/cookies",
        },
      );
      if (path === "/renew" && res.status === 401) {
        await up.discard(c, res);
        headers.set("authorization", "Bearer fresh");
        res = await up.forward(c, { url: `${upstreamUrl}/renew`, method: "GET", headers, body: null });
      }
      return res;
    });
    gateway = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: withDirectRelays(app.fetch), hostname: "127.0.0.1", port: 0 }, () => resolve(s));
    });
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    unwrapped = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
    });
    unwrappedUrl = `http://127.0.0.1:${(unwrapped.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((r) => gateway.close(r));
    await new Promise((r) => unwrapped.close(r));
    await transport.close();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it("sends the body in hand with its length, and passes the answer back with the chain's headers, minus hop-by-hop and set-cookie", async () => {
    const res = await request(`${gatewayUrl}/run?x=1`, {
      method: "POST",
      body: '{"cmd":"ls"}',
      headers: { "content-type": "application/json", "x-request-id": "req-1" },
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers["x-upstream"]).toBe("yes");
    expect(res.headers["x-request-id"]).toBe("req-1");
    expect(res.headers["ratelimit-remaining"]).toBe("7");
    expect(res.headers["set-cookie"]).toBeUndefined();
    expect(res.headers["x-tollgate-direct-relay"]).toBeUndefined();
    expect(await res.body.json()).toMatchObject({ method: "POST", url: "/run", auth: "Bearer old" });
    expect(seen.at(-1)).toMatchObject({ url: "/run", len: "12", te: undefined, body: '{"cmd":"ls"}' });
    expect(logged.at(-1)).toMatchObject({ status: 201 });
    expect(typeof logged.at(-1)?.upstreamMs).toBe("number");
  });

  it("writes the standard reason phrase, never the marker the chain's Response carries", async () => {
    const { get } = await import("node:http");
    const message = await new Promise<string | undefined>((resolve, reject) =>
      get(`${gatewayUrl}/run`, (res) => {
        res.resume();
        resolve(res.statusMessage);
      }).on("error", reject),
    );
    expect(message).toBe("Created");
  });

  it("takes the standard path on a server that does not finish direct relays", async () => {
    const res = await request(`${unwrappedUrl}/run`, { headers: { "x-request-id": "req-2" } });
    expect(res.statusCode).toBe(201);
    expect(res.headers["x-request-id"]).toBe("req-2");
    expect(res.headers["set-cookie"]).toBeUndefined();
    expect(await res.body.json()).toMatchObject({ method: "GET", url: "/run" });
  });

  it("streams a body of unknown length to the upstream (chunked)", async () => {
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(new TextEncoder().encode("part one, "));
        ctl.enqueue(new TextEncoder().encode("part two"));
        ctl.close();
      },
    });
    const res = await request(`${gatewayUrl}/upload`, { method: "PUT", body: body as never });
    expect(res.statusCode).toBe(201);
    await res.body.dump();
    expect(seen.at(-1)).toMatchObject({ url: "/upload", te: "chunked", body: "part one, part two" });
  });

  it("keeps every Set-Cookie where asked (exposed ports)", async () => {
    const res = await request(`${gatewayUrl}/cookies`);
    await res.body.dump();
    expect(res.headers["set-cookie"]).toEqual(["a=1", "b=2"]);
  });

  it("discards a 401 and replays with the renewed credential", async () => {
    const res = await request(`${gatewayUrl}/renew`);
    expect(res.statusCode).toBe(201);
    expect(((await res.body.json()) as { auth: string }).auth).toBe("Bearer fresh");
  });

  it("streams an answer as it comes", async () => {
    const res = await request(`${gatewayUrl}/stream`);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    const at: number[] = [];
    const t0 = performance.now();
    for await (const _ of res.body) at.push(performance.now() - t0);
    expect(at.length).toBeGreaterThanOrEqual(2);
    expect(at.at(-1)! - at[0]!).toBeGreaterThan(20);
  });

  it("finds its answer when Hono copied the Response, and drops it when an error replaced it", async () => {
    const peek = await request(`${gatewayUrl}/peek/run`);
    expect(peek.statusCode).toBe(201);
    expect(await peek.body.json()).toMatchObject({ url: "/run" });
    const replaced = await request(`${gatewayUrl}/fail-after/run`);
    expect(replaced.statusCode).toBe(409);
    expect(await replaced.body.json()).toMatchObject({ code: "conflict" });
    expect(replaced.headers["x-tollgate-direct-relay"]).toBeUndefined();
  });

  it("ends the upstream call when the client goes away before the answer", async () => {
    const ctl = new AbortController();
    const pending = request(`${gatewayUrl}/hang-until-close`, { signal: ctl.signal }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    clientGoneAt = performance.now();
    ctl.abort();
    await pending;
    const deadline = Date.now() + 2000;
    while (!upstreamSawClose && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(upstreamSawClose).toBeGreaterThan(0);
    expect(upstreamSawClose - clientGoneAt).toBeLessThan(250); // not the 300 ms headers timeout
  });

  it("sends an idempotent request again on a fresh socket when the kept-alive one was closed by the upstream", async () => {
    for (let i = 0; i < 3; i++) {
      const before = seen.length;
      const res = await request(`${gatewayUrl}/reset-on-reuse`);
      expect(res.statusCode).toBe(201);
      expect(await res.body.json()).toMatchObject({ url: "/reset-on-reuse" });
      expect(seen.length).toBe(before + 1); // the reset socket never got as far as a request the upstream served
    }
    // Not a POST: it may have been acted on, so it is a 502 for the client to decide on. The retry above ran on a
    // connection of its own, so the pool may hold no kept-alive socket now: one GET served first leaves one to reuse
    // (without it the POST could open a fresh socket, which the upstream serves).
    await (await request(`${gatewayUrl}/run`)).body.dump();
    const post = await request(`${gatewayUrl}/reset-on-reuse`, { method: "POST", body: "x", headers: { "content-length": "1" } });
    expect(post.statusCode).toBe(502);
    await post.body.dump();
  });

  it("answers 504 JSON when the upstream sends no headers in time, 502 when it cannot be reached", async () => {
    const slow = await request(`${gatewayUrl}/stall`);
    expect(slow.statusCode).toBe(504);
    expect(((await slow.body.json()) as { code: string }).code).toBe("upstream_timeout");
    const down = await request(`${gatewayUrl}/unreachable`);
    expect(down.statusCode).toBe(502);
    expect(await down.body.json()).toMatchObject({ code: "upstream_unavailable", message: "runtime away" });
  });
});
