// validHost behind a real socket: @hono/node-server builds c.req.url from the Host header as sent, which is where a
// Host that makes no URL comes from (app.request cannot even build such a Request).
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorResponse } from "../../src/errors.js";
import { requestUrl } from "../../src/web/request-url.js";
import { validHost } from "./index.js";

let server: ServerType;
let port: number;
let routeRuns = 0;

beforeAll(async () => {
  const a = new Hono();
  a.onError((err) => errorResponse(err));
  a.use(validHost());
  a.get("*", (c) => {
    routeRuns++;
    return c.json({ host: requestUrl(c).host });
  });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: a.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
});

/** One GET with the Host line exactly as given (none when null), over its own connection; bounded at 2 s. */
function get(host: string | null): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no answer for Host ${JSON.stringify(host)}`));
    }, 2000);
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("error", reject);
    s.on("end", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString();
      const [head = "", body = ""] = text.split("\r\n\r\n");
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ status: Number(head.split(" ")[1]), json });
    });
    s.end(`GET /api/sandboxes?x=1 HTTP/1.1\r\n${host === null ? "" : `Host: ${host}\r\n`}Connection: close\r\n\r\n`);
  });
}

describe("validHost", () => {
  it.each(["foo.123", "1.2.3.4.5", "xn--", "3000-sbx.1.2.3.4.5", "foo.123:8080"])(
    "answers 400 invalid_host as JSON {message, code} for Host %s, before the route runs",
    async (host) => {
      const before = routeRuns;
      const res = await get(host);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ message: "The Host header is not a valid host name.", code: "invalid_host" });
      expect(routeRuns).toBe(before);
    },
  );

  it.each([
    ["gw.example.com", "gw.example.com"],
    ["GW.Example.COM:8443", "gw.example.com:8443"],
    ["localhost:8787", "localhost:8787"],
    ["127.0.0.1", "127.0.0.1"],
    ["10.1.2.3:9000", "10.1.2.3:9000"],
    ["[::1]", "[::1]"],
    ["[2001:db8::1]:8787", "[2001:db8::1]:8787"],
    ["3000-sbx1.gw.example.com", "3000-sbx1.gw.example.com"],
  ])("lets Host %s through, the route reading it as %s", async (host, seen) => {
    const res = await get(host);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ host: seen });
  });

  it("still refuses a bad Host after many good ones (the origins it remembers are bounded)", async () => {
    const a = new Hono();
    a.onError((err) => errorResponse(err));
    a.use(validHost());
    a.get("*", (c) => c.text("ok"));
    for (let i = 0; i < 1500; i++) expect((await a.request(`http://h${i}.example.com/x`)).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const res = await get("foo.123");
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ code: "invalid_host" });
    }
    expect((await get("gw.example.com")).status).toBe(200);
    expect((await get("gw.example.com")).status).toBe(200);
  });

  it("never lets a Host with spaces, a bad port or none at all reach a route, and never answers 500", async () => {
    // These the Node adapter refuses itself (400) before any middleware runs; an empty Host is read as the bind address.
    const before = routeRuns;
    for (const host of ["foo bar.com", "gw.example.com:99999", "gw.example.com:abc", "[zz]", "a/b", null]) {
      expect((await get(host)).status, JSON.stringify(host)).toBe(400);
    }
    expect(routeRuns).toBe(before);
    expect(await get("")).toEqual({ status: 200, json: { host: "127.0.0.1" } });
  });
});
