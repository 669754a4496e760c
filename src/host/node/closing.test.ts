// Connections the Node server will not read to the end still deliver their answer: an answer given before the request
// body came in says Connection: close and closes lingering; a request Node cannot parse gets the JSON error, lingering.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { startNodeGateway, type RunningGateway } from "../node.js";
import { startBareGateway } from "../../../test/helpers/gateway.js";
import { parseConfig } from "../../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../identity/tenants.js";

/** Writes raw bytes (then `more`, if any, without waiting) and collects everything until the gateway closes (or 5 s). */
function raw(port: number, text: string, more?: Buffer): Promise<{ text: string; closed: boolean; error?: string }> {
  return new Promise((resolve) => {
    const sock = connect(port, "127.0.0.1");
    let out = "";
    let error: string | undefined;
    const timer = setTimeout(() => (sock.destroy(), resolve({ text: out, closed: false, error })), 5000);
    sock.on("data", (d) => (out += d.toString("latin1")));
    sock.on("error", (e: NodeJS.ErrnoException) => (error = e.code));
    sock.on("close", () => (clearTimeout(timer), resolve({ text: out, closed: true, error })));
    sock.write(text);
    if (more) sock.write(more);
  });
}

/** Posts `body` to an unauthenticated route: the gateway answers 401 without reading it. */
function postUnread(port: number, body: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, method: "POST", path: "/api/profile", headers: { "content-type": "application/json" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(`${res.statusCode} ${res.headers.connection}`));
        res.on("error", () => resolve(`${res.statusCode} ${res.headers.connection}`));
      },
    );
    req.on("error", (e: NodeJS.ErrnoException) => resolve(`no answer (${e.code})`));
    req.end(body);
  });
}

describe("closing connections the server does not read to the end", () => {
  let gw: RunningGateway;
  let host: string;
  beforeAll(async () => {
    gw = await startBareGateway();
    host = `127.0.0.1:${gw.port}`;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers a request refused before its body came in with Connection: close, then closes", async () => {
    // Said keep-alive, a client sent its next request on this connection, which the server then closed unread (the
    // fuzzer's "socket hang up" on the request after a refused large body).
    const r = await raw(
      gw.port,
      `POST /api/profile HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{"name":`,
    );
    expect(r.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(r.closed).toBe(true);
  });

  it("delivers that answer while the client is still sending a large body", async () => {
    // (As below: the reset an immediate close risks shows against a gateway process, rarely in one process.)
    const body = Buffer.alloc(4 * 1024 * 1024, 0x20);
    const outcomes = await Promise.all(Array.from({ length: 16 }, () => postUnread(gw.port, body)));
    expect(outcomes).toEqual(Array(16).fill("401 close"));
  });

  it("answers an Expect other than 100-continue with a JSON 417, delivered to a client still sending a large body", async () => {
    // Node answered these itself (a bare 417) and, the client having said Connection: close, closed at once with the
    // body unread: the client got EPIPE and no answer (the fuzzer, about one in four of these).
    const size = 3 * 1024 * 1024;
    const send = () =>
      new Promise<string>((resolve) => {
        const headers = { expect: "bogus", connection: "close", "content-length": String(size), "content-type": "application/json" };
        const req = httpRequest({ host: "127.0.0.1", port: gw.port, method: "PUT", path: "/sandbox/x/files/upload", headers }, (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => resolve(`${res.statusCode} ${text}`));
          res.on("error", () => resolve(`${res.statusCode} ${text}`));
        });
        req.on("error", (e: NodeJS.ErrnoException) => resolve(`no answer (${e.code})`));
        req.end(Buffer.alloc(size, 0x20));
      });
    const outcomes = await Promise.all(Array.from({ length: 16 }, send));
    const answer = `417 ${JSON.stringify({ message: "Only Expect: 100-continue is supported.", code: "expectation_failed" })}`;
    expect(outcomes).toEqual(Array(16).fill(answer));
  });

  it("answers a request it cannot parse with a JSON 400 bad_request and closes", async () => {
    const r = await raw(
      gw.port,
      `POST /api/profile HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    );
    expect(r.closed).toBe(true);
    expect(r.text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(r.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(r.text.slice(r.text.indexOf("\r\n\r\n") + 4))).toEqual({
      code: "bad_request",
      message: "The request is not valid HTTP/1.1.",
    });
  });

  it("answers headers too large with a JSON 431", async () => {
    const r = await raw(gw.port, `GET /_tollgate/health HTTP/1.1\r\nHost: ${host}\r\nx-big: ${"v".repeat(100_000)}\r\n\r\n`);
    expect(r.text).toMatch(/^HTTP\/1\.1 431 /);
    expect(r.text).toContain('"code":"headers_too_large"');
  });

  it("delivers the parse error while the client is still sending a large body (no reset)", async () => {
    // A byte Node's parser refuses in the request line, then 4 MB of body: Node answered a bare 400 and closed at once,
    // with the body unread, which resets the connection and can discard the answer unread (the fuzzer saw it against a
    // gateway process; in one process on loopback the client mostly reads the answer first, so this rarely fails).
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        raw(
          gw.port,
          `PUT /sandbox/\u00e9/files HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n`,
          Buffer.alloc(4 * 1024 * 1024, 0x20),
        ),
      ),
    );
    for (const r of results) expect(r.text).toMatch(/^HTTP\/1\.1 400 /);
  });

  it("still serves requests afterwards", async () => {
    expect((await fetch(`http://${host}/_tollgate/health`)).status).toBe(200);
  });
});

describe("keeping connections open whose request came in whole", () => {
  it("answers a small body that came with its head at once, and the connection serves the next request", async () => {
    // The body is taken as it sits once its declared length is in (./held-body.ts), before node:http has marked the
    // message complete: that answer is no early one, and must not close the connection (it did: every such request
    // then paid a new connection and a lingering close).
    const key = generateTenantKey();
    const gw = await startNodeGateway({
      config: parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "error" },
        upstream: { baseUrl: "http://127.0.0.1:9" },
        tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }] }],
      }),
      secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) },
    });
    try {
      const sock = connect(gw.port, "127.0.0.1");
      let out = "";
      let closed = false;
      sock.on("data", (d) => (out += d.toString("latin1")));
      sock.on("close", () => (closed = true));
      const body = JSON.stringify({ query: "tollgate", notDeclared: 1 });
      const request = `POST /api/web/search HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nx-api-key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      const answers = async (n: number) => {
        for (let i = 0; i < 100 && (out.match(/HTTP\/1\.1 /g)?.length ?? 0) < n; i++) await new Promise((r) => setTimeout(r, 20));
      };
      sock.write(request);
      await answers(1);
      sock.write(request);
      await answers(2);
      sock.destroy();
      const heads = out.split(/HTTP\/1\.1 /).slice(1);
      expect(heads).toHaveLength(2);
      for (const head of heads) {
        expect(head).toMatch(/^400 /);
        expect(head).toContain("unknown_field");
        expect(head).not.toMatch(/\r\nconnection: close\r\n/i);
      }
      expect(closed).toBe(false);
    } finally {
      await gw.close();
    }
  });
});
