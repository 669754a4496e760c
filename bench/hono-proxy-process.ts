// Baseline for the proxy benchmarks: the plainest Hono pass-through (hono/proxy, i.e. global fetch) to one upstream,
// injecting a fixed upstream token (and Host, when PROXY_HOST is set) and checking nothing. Prints `READY <port>`.
import { Hono } from "hono";
import { proxy } from "hono/proxy";
import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { Agent, setGlobalDispatcher } from "undici";

const upstream = process.env.PROXY_UPSTREAM!;
const token = process.env.PROXY_TOKEN!;
const host = process.env.PROXY_HOST || undefined;
// fetch will not send a Host of its own choosing: an interceptor on the global dispatcher puts PROXY_HOST on the wire.
if (host) {
  setGlobalDispatcher(
    new Agent().compose((dispatch) => (opts, handler) => {
      const given = opts.headers as unknown;
      const h: Record<string, unknown> = {};
      if (Array.isArray(given)) for (let i = 0; i + 1 < given.length; i += 2) h[String(given[i])] = given[i + 1];
      else Object.assign(h, given);
      return dispatch({ ...opts, headers: { ...h, host } as Record<string, string> }, handler);
    }),
  );
}
const app = new Hono();
app.all("*", (c) => {
  const u = new URL(c.req.url);
  return proxy(`${upstream}${u.pathname}${u.search}`, {
    raw: c.req.raw,
    headers: { ...c.req.header(), host: undefined, authorization: `Bearer ${token}` },
  });
});
const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => {
  process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
