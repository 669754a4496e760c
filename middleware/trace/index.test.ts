// traceRequests with a recording Tracer (the interface of src/telemetry/tracing.ts; the OTLP one is tested end to end
// in test/operators/tracing.test.ts): one server span per request, from the client's traceparent, its trace id in the
// request's log line, ended with the route and status.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse, GatewayError } from "../../src/errors.js";
import type { Span, Tracer } from "../../src/telemetry/tracing.js";
import { Logger, Redactor } from "../../src/log.js";
import { accessLog } from "../access-log/index.js";
import { traceRequests } from "./index.js";

interface Recorded {
  name: string;
  parent: string | undefined;
  attributes: Record<string, string | number | boolean>;
  ended: number;
  error?: string;
}

function recordingTracer(): Tracer & { spans: Recorded[] } {
  const spans: Recorded[] = [];
  return {
    spans,
    start(name, parent, attributes = {}) {
      const r: Recorded = {
        name,
        parent: typeof parent === "string" ? parent : parent?.traceparent(),
        attributes: { ...attributes },
        ended: 0,
      };
      spans.push(r);
      const traceId = `trace${spans.length}`.padEnd(32, "0");
      const span: Span = {
        traceId,
        traceparent: () => `00-${traceId}-${"1".repeat(16)}-01`,
        setAttribute: (k, v) => {
          r.attributes[k] = v;
        },
        end: (error) => {
          r.ended++;
          r.error = error;
        },
      };
      return span;
    },
    flush: async () => {},
  };
}

function app(tracer: Tracer) {
  const lines: Array<Record<string, unknown>> = [];
  const a = new Hono<GatewayEnv>();
  a.onError((err) => errorResponse(err));
  a.use(accessLog(new Logger((l) => lines.push(JSON.parse(l)), "info", new Redactor())));
  a.use(traceRequests(tracer));
  a.get("/api/sandbox/:id", (c) => {
    c.get("logFields").route = "sandbox.get";
    return c.json({ id: c.req.param("id"), traced: c.var.span.traceId });
  });
  a.get("/_tollgate/health", (c) => c.json({ ok: true }));
  a.get("/boom", () => {
    throw new Error("unexpected");
  });
  a.get("/refused", () => {
    throw new GatewayError(404, "not_found", "Sandbox x not found");
  });
  return { a, lines };
}

describe("traceRequests", () => {
  it("starts one server span per request, a child of the client's traceparent, and ends it with the route and status", async () => {
    const tracer = recordingTracer();
    const { a } = app(tracer);
    const parent = `00-${"a".repeat(32)}-${"b".repeat(16)}-01`;
    const res = await a.request("/api/sandbox/sb_1", { headers: { traceparent: parent } });
    expect(res.status).toBe(200);
    expect((await res.json()).traced).toBe("trace1".padEnd(32, "0"));
    expect(tracer.spans).toEqual([
      {
        name: "GET request",
        parent,
        attributes: { "http.request.method": "GET", "http.route": "sandbox.get", "http.response.status_code": 200 },
        ended: 1,
        error: undefined,
      },
    ]);
  });

  it("names the gateway's own endpoints by their prefix only (no ids in span names)", async () => {
    const tracer = recordingTracer();
    await app(tracer).a.request("/_tollgate/health");
    expect(tracer.spans.map((s) => s.name)).toEqual(["GET /_tollgate"]);
    expect(tracer.spans[0]!.parent).toBeUndefined();
  });

  it("puts the trace id in the request's log line", async () => {
    const tracer = recordingTracer();
    const { a, lines } = app(tracer);
    await a.request("/api/sandbox/sb_2");
    expect(lines.find((l) => l.msg === "request")).toMatchObject({ traceId: "trace1".padEnd(32, "0"), route: "sandbox.get" });
  });

  it("marks a 5xx answer failed and a refusal (4xx) not, each span ended once", async () => {
    const tracer = recordingTracer();
    const { a } = app(tracer);
    expect((await a.request("/boom")).status).toBe(500);
    expect((await a.request("/refused")).status).toBe(404);
    expect(tracer.spans.map((s) => [s.attributes["http.response.status_code"], s.error, s.ended])).toEqual([
      [500, "status 500", 1],
      [404, undefined, 1],
    ]);
  });
});
