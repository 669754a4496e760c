// The Node entry's tracer: OpenTelemetry's SDK with a batching OTLP/HTTP exporter (JSON) to `tracing.otlpEndpoint`.
// Parents are passed explicitly (the request's span in the Hono context), so no global context manager is installed.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span as OtelSpan } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { Span, Tracer } from "../../telemetry/tracing.js";

const propagator = new W3CTraceContextPropagator();
const getter = {
  get: (carrier: { traceparent: string }, key: string) => (key === "traceparent" ? carrier.traceparent : undefined),
  keys: () => ["traceparent"],
};

class OtelSpanHandle implements Span {
  private ended = false;
  constructor(readonly span: OtelSpan) {}
  get traceId() {
    return this.span.spanContext().traceId;
  }
  traceparent() {
    const s = this.span.spanContext();
    return `00-${s.traceId}-${s.spanId}-0${(s.traceFlags & 1).toString(16)}`;
  }
  setAttribute(key: string, value: string | number | boolean) {
    this.span.setAttribute(key, value);
  }
  end(error?: string) {
    if (this.ended) return;
    this.ended = true;
    if (error) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end();
  }
}

/**
 * @example createGateway(config, { ..., tracer: otelTracer({ endpoint: "http://127.0.0.1:4318/v1/traces", serviceName: "tollgate" }) })
 */
export function otelTracer(opts: { endpoint: string; serviceName: string; version: string }): Tracer {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": opts.serviceName, "service.version": opts.version }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: opts.endpoint }), { scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer("tollgate", opts.version);
  return {
    start(name, parent, attributes, spanKind) {
      let ctx = ROOT_CONTEXT;
      if (parent instanceof OtelSpanHandle) ctx = trace.setSpan(ROOT_CONTEXT, parent.span);
      else if (typeof parent === "string") ctx = propagator.extract(ROOT_CONTEXT, { traceparent: parent }, getter);
      const kind = spanKind === "client" ? SpanKind.CLIENT : parent instanceof OtelSpanHandle ? SpanKind.INTERNAL : SpanKind.SERVER;
      return new OtelSpanHandle(tracer.startSpan(name, { kind, attributes }, ctx));
    },
    async flush() {
      await provider.forceFlush();
    },
  };
}
