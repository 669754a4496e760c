// OpenTelemetry traces against a local OTLP/HTTP receiver (127.0.0.1, decoding the JSON export): the client's
// traceparent is accepted and a child of it goes upstream; the request, each chain step, the payment and each upstream
// call are spans of that trace; the trace id is in the request's log line. Not configured: nothing is traced.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { parseConfig } from "../../config/load.js";
import type { EmulatorHandle } from "../../emulator/index.js";
import { startNodeGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  status?: { code?: number; message?: string };
}

/** An OTLP/HTTP traces receiver: every span of every JSON export it is sent. */
async function startOtlpReceiver() {
  const spans: ExportedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      contentTypes.push(String(req.headers["content-type"]));
      const doc = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: ExportedSpan[] }> }> };
      for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    spans,
    contentTypes,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** A stand-in upstream recording the traceparent of each request. */
async function startRecordingUpstream() {
  const seen: Array<string | undefined> = [];
  const server = createServer((req, res) => {
    seen.push(req.headers.traceparent as string | undefined);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ usage: 1, limit: 10, remaining: 9 }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    seen,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const attr = (s: ExportedSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

async function adminGateway(upstreamUrl: string, tracing: Record<string, unknown>) {
  const key = generateTenantKey();
  const logs: string[] = [];
  const gw = await startNodeGateway({
    config: parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "info" },
      upstream: { baseUrl: upstreamUrl },
      payments: { enabled: false },
      tracing,
      tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(key) }] }],
    }),
    secrets: { upstreamApiKey: "up-key", tokenSecret: randomBytes(32).toString("hex") },
    logSink: (l) => logs.push(l),
  });
  return { gw, key, logs };
}

describe("OpenTelemetry traces over OTLP/HTTP", () => {
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
  beforeAll(async () => {
    [otlp, upstream] = await Promise.all([startOtlpReceiver(), startRecordingUpstream()]);
  });
  afterAll(async () => {
    await otlp?.close();
    await upstream?.close();
  });

  it("continues the client's trace: request, chain steps and upstream call as spans, a child traceparent upstream, the trace id logged", async () => {
    const { gw, key, logs } = await adminGateway(upstream.url, { otlpEndpoint: otlp.url });
    const traceId = randomBytes(16).toString("hex");
    const parent = randomBytes(8).toString("hex");
    try {
      const r = await fetch(`${gw.url}/api/team/credit-info`, { headers: { "x-api-key": key, traceparent: `00-${traceId}-${parent}-01` } });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    } finally {
      await gw.close(); // flushes the spans
    }
    // Upstream: the same trace, a new parent (the gateway's upstream span).
    const sent = upstream.seen.at(-1)!;
    const [, upTrace, upParent, flags] = sent.split("-");
    expect(upTrace).toBe(traceId);
    expect(upParent).not.toBe(parent);
    expect(flags).toBe("01");

    const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === "request" && l.path === "/api/team/credit-info");
    expect(line.traceId).toBe(traceId);

    const spans = otlp.spans.filter((s) => s.traceId === traceId);
    const server = spans.find((s) => s.parentSpanId === parent)!;
    expect(server).toBeDefined();
    expect(server.kind).toBe(2); // SERVER
    expect(attr(server, "http.response.status_code")).toBe(200);
    const steps = spans.filter((s) => s.parentSpanId === server.spanId).map((s) => s.name);
    expect(steps).toEqual(expect.arrayContaining(["identifyCaller", "handler.forward"]));
    const client = spans.find((s) => s.spanId === upParent)!;
    expect(client).toMatchObject({ kind: 3, name: "upstream GET" }); // CLIENT
    expect(attr(client, "url.path")).toBe("/api/team/credit-info");
    expect(JSON.stringify(spans)).not.toContain("up-key");
    expect(otlp.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);
  });

  it("is off, and passes the client's traceparent through untouched, when no endpoint is configured", async () => {
    const before = otlp.spans.length;
    const { gw, key, logs } = await adminGateway(upstream.url, {});
    const tp = `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;
    try {
      expect(gw.gateway.services.tracer).toBeUndefined();
      expect(gw.gateway.upstream.tracer).toBeUndefined();
      const r = await fetch(`${gw.url}/api/team/credit-info`, { headers: { "x-api-key": key, traceparent: tp } });
      await r.arrayBuffer();
    } finally {
      await gw.close();
    }
    expect(upstream.seen.at(-1)).toBe(tp);
    expect(logs.map((l) => JSON.parse(l)).find((l) => l.msg === "request").traceId).toBeUndefined();
    expect(otlp.spans.length).toBe(before);
  });
});

describe("a paid search, traced (emulator + local chain)", () => {
  let emu: EmulatorHandle;
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  beforeAll(async () => {
    [emu, otlp] = await Promise.all([startEmulatorWithChain(), startOtlpReceiver()]);
  }, 60_000);
  afterAll(async () => {
    await emu?.close();
    await otlp?.close();
  });

  it("has a payment span holding both upstream calls (the 402 and the paid one)", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }], { tracing: { otlpEndpoint: otlp.url } });
    let traceId: string | undefined;
    try {
      const r = await fetch(`${s.gateway.url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": s.keys.acme, "content-type": "application/json" },
        body: JSON.stringify({ query: "traced payment" }),
      });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    } finally {
      await s.close();
    }
    const payment = otlp.spans.find((x) => x.name === "x402.payment")!;
    expect(payment).toBeDefined();
    traceId = payment.traceId;
    expect(Number(attr(payment, "tollgate.paid_usd"))).toBeGreaterThan(0);
    expect(attr(payment, "tollgate.ledger_state")).toBe("committed");
    const calls = otlp.spans.filter((x) => x.traceId === traceId && x.kind === 3);
    expect(calls.length).toBe(2);
    expect(calls.filter((c) => c.parentSpanId === payment.spanId)).toHaveLength(1); // the paid retry
    const names = otlp.spans.filter((x) => x.traceId === traceId).map((x) => x.name);
    expect(names.filter((n) => n.startsWith("handler."))).toHaveLength(1);
    expect(names).toContain("identifyCaller");
  }, 60_000);
});
