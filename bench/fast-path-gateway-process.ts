// What wiring the Node fast path would give, measured before the route table has it: the real gateway (same config,
// services and chain middlewares), with the runtime plane's GET/POST answered by the same decisions as
// src/routes/runtime.ts (token, scope, tenant, custody, allowed host) but sent with nodeForward (src/node/fast-path.ts).
// Bench only: WebSockets, presign rewriting and bodies without a length still go to the real routes. Env as
// test/gateway/sandbox-gateway-process.ts; prints `READY <port>`.
import { Hono } from "hono";
import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { parseConfig } from "../config/load.js";
import { createGateway } from "../src/gateway.js";
import type { GatewayEnv } from "../src/context.js";
import { GatewayError, errorResponse } from "../src/errors.js";
import { undiciTransport } from "../src/node/undici-transport.js";
import { nodeForward, type ForwardDecision } from "../src/node/fast-path.js";
import { requestId } from "../middleware/request-id/index.js";
import { accessLog } from "../middleware/access-log/index.js";
import { bearerToken } from "../src/tenants.js";
import { requireTokenScope } from "../src/tokens.js";
import { sandboxCustody } from "../src/sandbox/custody.js";
import { RuntimeForwarder } from "../src/sandbox/runtime-forward.js";
import { forwardableRequestHeaders } from "../src/transport.js";

const config = parseConfig(JSON.parse(process.env.TOLLGATE_CHILD_CONFIG ?? "{}"));
const secrets = JSON.parse(process.env.TOLLGATE_CHILD_SECRETS ?? "{}");
const transport = undiciTransport({ headersTimeoutMs: config.upstream.timeoutMs });
const gw = createGateway(config, { secrets, transport, logSink: () => {} });
const services = gw.services;
const custody = sandboxCustody(services);
const forwarder = new RuntimeForwarder(services, custody);

const app = new Hono<GatewayEnv>();
app.onError((err, c) => errorResponse(err, c.get("requestId")));
app.use(requestId());
app.use(accessLog(gw.logger));
app.on(["GET", "POST"], "/sandbox/:id/*", async (c, next) => {
  const url = new URL(c.req.url);
  const len = c.req.header("content-length");
  if ((c.req.header("upgrade") ?? "") !== "" || url.pathname.includes("/files/presign") || (c.req.method === "POST" && len === undefined))
    return next();
  const raw = url.pathname.split("/")[2] ?? "";
  const id = decodeURIComponent(raw);
  const rest = (url.pathname.slice(`/sandbox/${raw}`.length) || "/") + url.search;
  const t = await services.tokens.verify(bearerToken(c.req.raw.headers));
  if (t.kind !== "sandbox" || t.resource !== id) throw new GatewayError(404, "not_found", `Sandbox ${id} not found`);
  requireTokenScope(t, /^\/pty(\/|$)/.test(rest) ? "terminal" : "runtime", id);
  const tenant = services.directory.get(t.tenant);
  if (!tenant?.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant this token was minted for is disabled.");
  c.get("logFields").tenant = tenant.id;
  const decide = async (renew: boolean): Promise<ForwardDecision> => {
    const cred = renew ? await custody.renew(c, id) : await custody.current(c, id);
    const headers: Record<string, string> = {};
    forwardableRequestHeaders(c.req.raw.headers).forEach((v, k) => {
      headers[k] = v;
    });
    headers.authorization = `Bearer ${cred.token}`;
    headers["x-request-id"] = c.get("requestId");
    if (len !== undefined) headers["content-length"] = len;
    return {
      url: forwarder.target(cred, rest),
      method: c.req.method,
      headers,
      body: c.req.method === "GET" ? null : "client",
      responseHeaders: { "x-request-id": c.get("requestId") },
      headersTimeoutMs: config.upstream.timeoutMs,
      onUnauthorized: () => decide(true),
    };
  };
  return nodeForward(c, await decide(false));
});
app.route("/", gw.app);

const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => {
  process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`);
});
const stop = () => void gw.close().then(() => server.close(() => process.exit(0)));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
