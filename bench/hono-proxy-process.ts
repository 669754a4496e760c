// Baseline for bench/sandbox-proxy.ts: the plainest Hono pass-through (hono/proxy, i.e. global fetch) to the runtime,
// injecting a fixed upstream token and checking nothing. Prints `READY <port>`.
import { Hono } from "hono";
import { proxy } from "hono/proxy";
import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";

const upstream = process.env.PROXY_UPSTREAM!;
const token = process.env.PROXY_TOKEN!;
const app = new Hono();
app.all("*", (c) => {
  const u = new URL(c.req.url);
  return proxy(`${upstream}${u.pathname}${u.search}`, { raw: c.req.raw, headers: { ...c.req.header(), host: undefined, authorization: `Bearer ${token}` } });
});
const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => {
  process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
