// The Node floor for bench/proxy.ts: a bare node:http server piping to one upstream through a keep-alive http.Agent,
// with the same header work a proxy must do (hop-by-hop dropped, upstream bearer and Host set) and nothing else: no
// Hono, no Request/Response, no Web streams. Env as hono-proxy-process.ts; prints `READY <port>`.
import { createServer, request, Agent, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { HOP } from "./hop-by-hop.js";

const upstream = new URL(process.env.PROXY_UPSTREAM!);
const token = process.env.PROXY_TOKEN!;
const host = process.env.PROXY_HOST || upstream.host;
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
/** PROXY_BURN_US: CPU spent in JS per request (a spin), to run the floor at a slower proxy's pace (bench/PROFILE.md). */
const burnUs = Number(process.env.PROXY_BURN_US ?? 0);

function forwardable(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k in h) if (!HOP.has(k) && h[k] !== undefined) out[k] = h[k]!;
  return out;
}

const server = createServer((req, res) => {
  if (burnUs > 0) for (const t0 = performance.now(); performance.now() - t0 < burnUs / 1000; );
  const headers = forwardable(req.headers);
  headers.host = host;
  headers.authorization = `Bearer ${token}`;
  const up = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent }, (ur) => {
    res.writeHead(ur.statusCode ?? 502, forwardable(ur.headers));
    ur.pipe(res);
  });
  up.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
