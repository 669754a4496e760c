// publicHostsOnly on the gateway's real services (memory state): which Hosts get past it, with and without
// server.publicHosts, and X-Forwarded-Host believed only from a trusted proxy (a real socket gives the peer address).
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { errorResponse } from "../../src/errors.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { publicHostsOnly } from "./index.js";

const REFUSED = {
  message: "This gateway answers only to its public host names (server.publicHosts); call it by one of them.",
  code: "host_not_allowed",
};

const open: Gateway[] = [];
const servers: ServerType[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const g of open.splice(0)) await g.close(0);
});

let routeRuns = 0;

function app(server: Record<string, unknown>) {
  const g = createGateway(parseConfig({ server: { logLevel: "error", ...server } }), {
    secrets: {},
    logSink: () => {},
    // The TCP peer, as the Node entry reads it; undefined under app.request (no socket: no proxy is trusted).
    peerAddress: (c) => {
      try {
        return getConnInfo(c).remote.address;
      } catch {
        return undefined;
      }
    },
  });
  open.push(g);
  const a = new Hono();
  a.onError((err) => errorResponse(err));
  a.use(publicHostsOnly(g.services));
  a.all("*", (c) => {
    routeRuns++;
    return c.json({ ok: true });
  });
  return a;
}

async function status(a: Hono, url: string) {
  const res = await a.request(url);
  return res.status;
}

describe("publicHostsOnly", () => {
  it("lets listed hosts through, on any port when the entry has none and only on its own when it has one", async () => {
    const a = app({ publicHosts: ["gw.example.com", "api.example.com:8443"] });
    expect(await status(a, "http://gw.example.com/api/sandboxes")).toBe(200);
    expect(await status(a, "http://GW.example.com:8787/api/sandboxes")).toBe(200);
    expect(await status(a, "https://api.example.com:8443/api/sandboxes")).toBe(200);
    expect(await status(a, "https://api.example.com:9443/api/sandboxes")).toBe(421);
    expect(await status(a, "https://api.example.com/api/sandboxes")).toBe(421);
  });

  it("matches an entry naming the scheme's default port, which the request's URL leaves out", async () => {
    const a = app({ publicHosts: ["gw.example.com:443", "plain.example.com:80"] });
    expect(await status(a, "https://gw.example.com/api/sandboxes")).toBe(200);
    expect(await status(a, "https://gw.example.com:443/api/sandboxes")).toBe(200);
    expect(await status(a, "http://gw.example.com/api/sandboxes")).toBe(421);
    expect(await status(a, "http://plain.example.com/api/sandboxes")).toBe(200);
    expect(await status(a, "https://plain.example.com/api/sandboxes")).toBe(421);
    expect(await status(a, "https://3000-sbx1.gw.example.com/")).toBe(200);
  });

  it("refuses any other host 421 host_not_allowed as JSON, before the route runs", async () => {
    const a = app({ publicHosts: ["gw.example.com"] });
    const before = routeRuns;
    for (const url of ["http://evil.test/api/sandboxes", "http://gw.example.com.evil.test/", "http://example.com/", "http://127.0.0.1/"]) {
      const res = await a.request(url, { method: "POST" });
      expect(res.status, url).toBe(421);
      expect(await res.json()).toEqual(REFUSED);
    }
    expect(routeRuns).toBe(before);
  });

  it("lets exposed-port hosts under a listed host through, and none under another host", async () => {
    const a = app({ publicHosts: ["gw.example.com", "localhost:8787"] });
    expect(await status(a, "http://3000-sbx1.gw.example.com/")).toBe(200);
    expect(await status(a, "http://8080-sbx_2.localhost:8787/index.html")).toBe(200);
    expect(await status(a, "http://3000-sbx1.localhost:9999/")).toBe(421);
    expect(await status(a, "http://3000-sbx1.evil.test/")).toBe(421);
    expect(await status(a, "http://70000-sbx1.gw.example.com/")).toBe(421); // not a port: not a port host
    expect(await status(a, "http://3000-sbx1.x.gw.example.com/")).toBe(421); // one label only before the listed host
  });

  it("answers the health check on any host (load balancers call it by address)", async () => {
    const a = app({ publicHosts: ["gw.example.com"] });
    expect(await status(a, "http://10.0.0.7:8787/_tollgate/health")).toBe(200);
    expect(await status(a, "http://10.0.0.7:8787/_tollgate/usage")).toBe(421);
  });

  it("refuses nothing without publicHosts, nor when publicOrigin fixes the URLs anyway", async () => {
    const none = app({});
    const fixed = app({ publicOrigin: "https://gw.example.com", publicHosts: ["gw.example.com"] });
    for (const url of ["http://evil.test/api/sandboxes", "http://3000-sbx1.evil.test/"]) {
      expect(await status(none, url), url).toBe(200);
      expect(await status(fixed, url), url).toBe(200);
    }
  });

  it("judges X-Forwarded-Host, not Host, when the peer is a trusted proxy, and ignores it from anyone else", async () => {
    const serveOn = async (a: Hono) => {
      const s = await new Promise<ServerType>((resolve) => {
        const s = serve({ fetch: a.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
      });
      servers.push(s);
      const base = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
      return async (host: string, forwardedHost?: string) => {
        const headers: Record<string, string> = { host };
        if (forwardedHost !== undefined) headers["x-forwarded-host"] = forwardedHost;
        const res = await fetchWithHost(`${base}/api/sandboxes`, headers);
        return { status: res.status, json: await res.json() };
      };
    };
    const behindProxy = await serveOn(app({ publicHosts: ["gw.example.com"], trustedProxies: ["127.0.0.1/32"] }));
    expect((await behindProxy("10.0.0.7:8787", "gw.example.com")).status).toBe(200);
    expect((await behindProxy("10.0.0.7:8787", "3000-sbx1.gw.example.com")).status).toBe(200);
    expect(await behindProxy("gw.example.com", "evil.test")).toEqual({ status: 421, json: REFUSED });
    // A chain of proxies appends: the first value is the one the client named.
    expect((await behindProxy("gw.example.com", "evil.test, gw.example.com")).status).toBe(421);
    expect((await behindProxy("10.0.0.7", "gw.example.com, evil.test")).status).toBe(200);
    // A forwarded host that is no bare host is the client's 400, not a refusal for the wrong name.
    expect(await behindProxy("gw.example.com", "gw.example.com/path")).toEqual({
      status: 400,
      json: { message: "The Host header is not a valid host name.", code: "invalid_host" },
    });

    const direct = await serveOn(app({ publicHosts: ["gw.example.com"] })); // no trusted proxies: X-Forwarded-Host is anyone's
    expect((await direct("gw.example.com", "evil.test")).status).toBe(200);
    expect(await direct("10.0.0.7:8787", "gw.example.com")).toEqual({ status: 421, json: REFUSED });
  });
});

/** fetch() will not send a Host of our choosing; node:http will. */
async function fetchWithHost(url: string, headers: Record<string, string>): Promise<{ status: number; json: () => Promise<unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, timeout: 2000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d) => chunks.push(d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: async () => JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer in 2 s")));
    req.on("error", reject);
    req.end();
  });
}
