// The floor's server relaying on undici instead of http.request, for bench/proxy.ts: a bare node:http server whose
// answers come through undici's dispatcher the way Tollgate's Node fast path takes them (src/host/node/direct-relay.ts:
// a Pool, `dispatch` with a handler writing the answer's head and chunks straight to the client's ServerResponse), with
// the floor's header work and nothing else. PROXY_HONO=1: the same relay as the one route of a Hono app on
// @hono/node-server, so a run shows what undici costs against http.request, what the framework adds, and what the
// gateway's own steps add on top. Env as raw-node-proxy-process.ts; prints `READY <port>`.
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import { type Dispatcher, Pool, util } from "undici";
import { HOP } from "./hop-by-hop.js";

const upstream = new URL(process.env.PROXY_UPSTREAM!);
const token = process.env.PROXY_TOKEN!;
const host = process.env.PROXY_HOST || upstream.host;
const pool = new Pool(upstream.origin, { connections: 256 });

function forwardable(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    if (!HOP.has(k)) out.push(k, raw[i + 1]!);
  }
  return out;
}

function relay(req: IncomingMessage, res: ServerResponse, done?: () => void): void {
  const headers = forwardable(req.rawHeaders);
  headers.push("host", host, "authorization", `Bearer ${token}`);
  const handler: Dispatcher.DispatchHandler = {
    onConnect() {},
    onError() {
      if (res.headersSent) res.destroy();
      else res.writeHead(502).end();
      done?.();
    },
    onHeaders(status: number, raw: Buffer[]) {
      const out: OutgoingHttpHeaders = {};
      for (let i = 0; i < raw.length; i += 2) {
        const k = util.headerNameToString(raw[i]!);
        if (!HOP.has(k)) out[k] = raw[i + 1]!.toString("latin1");
      }
      res.writeHead(status, out);
      return true;
    },
    onData(chunk: Buffer) {
      return res.write(chunk);
    },
    onComplete() {
      res.end();
      done?.();
    },
  };
  const bodiless = req.method === "GET" || req.method === "HEAD";
  pool.dispatch(
    { origin: upstream.origin, path: req.url!, method: req.method as Dispatcher.HttpMethod, headers, body: bodiless ? null : req },
    handler,
  );
}

if (process.env.PROXY_HONO) {
  const app = new Hono<{ Bindings: { incoming: IncomingMessage; outgoing: ServerResponse } }>();
  app.all("*", (c) => new Promise<Response>((r) => relay(c.env.incoming, c.env.outgoing, () => r(RESPONSE_ALREADY_SENT))));
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => process.stdout.write(`READY ${info.port}\n`));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
} else {
  const server = createServer((req, res) => relay(req, res));
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}
