// Traces on Workers: inside workerd, a gateway on Durable Objects with the Worker entry's tracer (OTLP/HTTP JSON over
// fetch) continues the client's traceparent, sends a child of it upstream (the emulator, over 127.0.0.1) and exports
// the request, its chain steps and the upstream call as spans to a real OTLP receiver, beside the request. The
// request's record in the tenant's request log carries the trace id.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { doStores } from "../../src/state/durable-client.js";
import { hashTenantKey } from "../../src/identity/tenants.js";
import { FetchTracer } from "../../src/telemetry/fetch-tracer.js";

const stack = inject("stack");
const bindings = env as unknown as Record<string, unknown>;

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

const hex = (n: number) => [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, "0")).join("");

describe("traces on Workers (OTLP over fetch, workerd)", () => {
  it("exports the request, its steps and the upstream call as one trace continuing the client's, beside the request", async () => {
    const key = `tg_acme_${crypto.randomUUID()}`;
    const config = parseConfig({
      server: { logLevel: "silent" },
      upstream: { baseUrl: stack.controlUrl },
      tracing: { otlpEndpoint: stack.otlpUrl },
      tenants: [{ id: "acme", scopes: ["admin", "sandboxes"], keys: [{ hash: await hashTenantKey(key) }] }],
    });
    const tracer = new FetchTracer({ endpoint: stack.otlpUrl, serviceName: "tollgate-worker", version: "test" });
    const gw = createGateway(config, {
      secrets: { upstreamApiKey: stack.apiKey, tokenSecret: "w".repeat(40) },
      stores: doStores(bindings, { namespace: `traces-${crypto.randomUUID()}` }),
      tracer,
    });
    const traceId = hex(16);
    const parent = hex(8);
    const r = await gw.app.request("/api/team/credit-info", {
      headers: { "x-api-key": key, traceparent: `00-${traceId}-${parent}-01`, "x-request-id": "w-trace-1" },
    });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    // Exported beside the request: no close needed; wait for the receiver to have it (bounded).
    let spans: ExportedSpan[] = [];
    for (let i = 0; i < 50 && !spans.some((s) => s.parentSpanId === parent); i++) {
      await new Promise((res) => setTimeout(res, 100));
      spans = ((await (await fetch(stack.otlpUrl)).json()) as ExportedSpan[]).filter((s) => s.traceId === traceId);
    }
    const server = spans.find((s) => s.parentSpanId === parent)!;
    expect(server).toMatchObject({ kind: 2, name: "GET request" });
    const attr = (s: ExportedSpan, k: string) => Object.values(s.attributes.find((a) => a.key === k)?.value ?? {})[0];
    expect(attr(server, "http.route")).toBe("team.creditInfo");
    expect(attr(server, "http.response.status_code")).toBe("200");
    const steps = spans.filter((s) => s.parentSpanId === server.spanId).map((s) => s.name);
    expect(steps).toEqual(expect.arrayContaining(["identifyCaller", "handler.forward"]));
    const client = spans.find((s) => s.kind === 3)!;
    expect(client).toMatchObject({ name: "upstream GET" });
    expect(JSON.stringify(spans)).not.toContain(stack.apiKey);
    // The request log's record names the trace.
    const log = (await (await gw.app.request("/_tollgate/requests?id=w-trace-1", { headers: { "x-api-key": key } })).json()) as {
      requests: Array<{ traceId?: string; status: number }>;
    };
    expect(log.requests).toEqual([expect.objectContaining({ traceId, status: 200 })]);
    await gw.close();
  });
});
