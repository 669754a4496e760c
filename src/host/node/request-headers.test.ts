// The hot request headers off node:http's parsed head (nodeHotHeader), over real sockets: each reads exactly as the
// Request's `Headers` reads it (repeats, whitespace, case, absence), and a subrequest dispatched in-process with the
// client's `incoming` reads its own headers.
import { serve, type HttpBindings, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { connect, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeHotHeader } from "./request-headers.js";
import { hotHeader, type HotHeader } from "../../web/request-headers.js";
import type { PlatformSpeed } from "../../web/speed.js";

const NAMES: HotHeader[] = ["content-length", "x-api-key", "cache-control", "idempotency-key"];
/** The Node entry's, with its fast paths on. */
const platform: PlatformSpeed = { hotHeader: nodeHotHeader };
let server: ServerType;
let port = 0;

beforeAll(async () => {
  const app = new Hono();
  const both = (c: Parameters<typeof hotHeader>[1]) =>
    Object.fromEntries(NAMES.map((n) => [n, { hot: hotHeader(platform, c, n) ?? null, request: c.req.raw.headers.get(n) }]));
  app.post("/read", (c) => c.json(both(c)));
  app.post("/sub-read", (c) => c.json(both(c)));
  app.post("/outer", async (c) => {
    const env = { incoming: (c.env as HttpBindings).incoming };
    const inner = new Request("http://127.0.0.1/sub-read", { method: "POST", headers: { "x-api-key": "inner-key" }, body: "{}" });
    return c.json(await (await app.fetch(inner, env)).json());
  });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Sends one raw request and returns the answer's JSON body, read once the server has closed the connection. */
function raw(request: string): Promise<Record<string, { hot: string | null; request: string | null }>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = connect(port, "127.0.0.1", () => sock.write(request.replace("\r\n", "\r\nConnection: close\r\n")));
    sock.on("data", (d: Buffer) => chunks.push(d));
    sock.on("error", reject);
    sock.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      resolve(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)));
    });
  });
}

describe("nodeHotHeader", () => {
  it("reads each name as the Request's Headers does: repeats joined, whitespace trimmed, any case, absent", async () => {
    const answer = await raw(
      "POST /read HTTP/1.1\r\nHost: x\r\nX-API-Key:  \tfirst \t\r\nx-api-key: second\r\nCache-Control: no-cache\r\n" +
        "cache-control:max-age=0 \r\nIDEMPOTENCY-KEY: k-1\r\nContent-Length: 2\r\n\r\n{}",
    );
    for (const n of NAMES) expect(answer[n]!.hot, n).toBe(answer[n]!.request);
    expect(answer["x-api-key"]!.hot).toBe("first, second");
    expect(answer["cache-control"]!.hot).toBe("no-cache, max-age=0");
    const none = await raw("POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    for (const n of NAMES) expect(none[n]!.hot, n).toBe(none[n]!.request);
    expect(none["x-api-key"]!.hot).toBeNull();
  });

  it("reads a subrequest's own headers, not those of the client whose incoming it carries", async () => {
    const answer = await raw(
      "POST /outer HTTP/1.1\r\nHost: x\r\nx-api-key: client-key\r\nidempotency-key: client\r\nContent-Length: 0\r\n\r\n",
    );
    expect(answer["x-api-key"]).toEqual({ hot: "inner-key", request: "inner-key" });
    expect(answer["idempotency-key"]).toEqual({ hot: null, request: null });
  });
});
