// The Workers tracer (src/telemetry/fetch-tracer.ts) against a local OTLP/HTTP receiver: spans are exported as OTLP
// JSON with fetch, a valid traceparent is continued and a malformed one starts a new trace, attributes keep their
// types; an export the receiver refuses drops its spans and says so without naming the endpoint (it may hold a token).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FetchTracer } from "../../src/telemetry/fetch-tracer.js";

let server: Server;
let url: string;
let status = 200;
const bodies: Array<{ type: string; doc: any }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      bodies.push({ type: String(req.headers["content-type"]), doc: JSON.parse(body) });
      res.writeHead(status, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces?token=secret-in-url`;
});
afterAll(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));

describe("FetchTracer", () => {
  it("exports OTLP JSON: the client's trace continued, children, kinds, typed attributes, an error status", async () => {
    const t = new FetchTracer({ endpoint: url, serviceName: "tg", version: "1.2.3" });
    const trace = "a".repeat(32);
    const root = t.start("GET request", `00-${trace}-${"b".repeat(16)}-01`, { "http.request.method": "GET" });
    const child = t.start("upstream GET", root, { "url.path": "/x", n: 3, ratio: 0.5, ok: true }, "client");
    expect(child.traceparent()).toMatch(new RegExp(`^00-${trace}-[0-9a-f]{16}-01$`));
    child.end("status 502");
    root.end();
    const fresh = t.start("GET request", "00-not-a-traceparent", {});
    fresh.end();
    await t.flush();
    const got = bodies.at(-1)!;
    expect(got.type).toBe("application/json");
    const rs = got.doc.resourceSpans[0];
    expect(rs.resource.attributes).toEqual([
      { key: "service.name", value: { stringValue: "tg" } },
      { key: "service.version", value: { stringValue: "1.2.3" } },
    ]);
    const spans = rs.scopeSpans[0].spans;
    const [c, r, f] = spans;
    expect(r).toMatchObject({ traceId: trace, parentSpanId: "b".repeat(16), kind: 2, status: { code: 0 } });
    expect(c).toMatchObject({ traceId: trace, parentSpanId: r.spanId, kind: 3, status: { code: 2, message: "status 502" } });
    expect(c.attributes).toEqual([
      { key: "url.path", value: { stringValue: "/x" } },
      { key: "n", value: { intValue: "3" } },
      { key: "ratio", value: { doubleValue: 0.5 } },
      { key: "ok", value: { boolValue: true } },
    ]);
    expect(BigInt(c.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(c.startTimeUnixNano));
    expect(f.traceId).not.toBe(trace);
    expect(f.parentSpanId).toBeUndefined();
    // Nothing left to send.
    const n = bodies.length;
    await t.flush();
    expect(bodies.length).toBe(n);
  });

  it("drops the spans of a refused export and says so without the endpoint", async () => {
    status = 503;
    try {
      const t = new FetchTracer({ endpoint: url, serviceName: "tg", version: "1" });
      t.start("a", undefined).end();
      t.start("b", undefined).end();
      const err = await t.flush().catch((e: Error) => e);
      expect(String(err)).toMatch(/OTLP export to the traces endpoint failed \(status 503\); 2 spans dropped/);
      expect(String(err)).not.toContain("secret-in-url");
      expect(t.dropped).toBe(2);
    } finally {
      status = 200;
    }
  });
});
