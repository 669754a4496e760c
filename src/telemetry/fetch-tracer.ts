// A Tracer on Web standards only, for Workers (the Node entry uses OpenTelemetry's SDK, src/host/node/otel-tracer.ts):
// spans are kept in a bounded buffer as they end and sent as OTLP/HTTP JSON with fetch, in batches, when `flush` is
// called: after each request, beside it (waitUntil on Workers; middleware/trace), and at close. The W3C traceparent of
// the client is continued; ids come from crypto.getRandomValues. A failed export drops its spans (never retried, never
// blocking a request).
import type { Span, Tracer } from "./tracing.js";

/** Spans held waiting for an export; past it new spans are dropped (counted). */
const MAX_BUFFERED = 2048;
/** Spans per OTLP request. */
const BATCH = 512;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

type AttributeValue = string | number | boolean;
type OtlpValue = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean };

interface Ended {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: 1 | 2 | 3;
  start: bigint;
  end: bigint;
  attributes: Record<string, AttributeValue>;
  error?: string;
}

export interface FetchTracerOptions {
  endpoint: string;
  serviceName: string;
  version: string;
  /** The fetch to export with (default the global one). */
  fetch?: typeof fetch;
  /** Epoch ns (default from Date.now and performance.now). */
  clock?: () => bigint;
}

function hex(bytes: number): string {
  let s = "";
  for (const b of crypto.getRandomValues(new Uint8Array(bytes))) s += b.toString(16).padStart(2, "0");
  return s;
}

function otlpValue(v: AttributeValue): OtlpValue {
  if (typeof v === "boolean") return { boolValue: v };
  if (typeof v === "number") return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  return { stringValue: v };
}

const attributes = (a: Record<string, AttributeValue>) => Object.entries(a).map(([key, v]) => ({ key, value: otlpValue(v) }));

class FetchSpan implements Span {
  private ended = false;
  readonly attributes: Record<string, AttributeValue>;
  private readonly start: bigint;

  constructor(
    private readonly tracer: FetchTracer,
    readonly traceId: string,
    readonly spanId: string,
    private readonly flags: string,
    private readonly parentSpanId: string | undefined,
    private readonly name: string,
    private readonly kind: 1 | 2 | 3,
    attrs: Record<string, AttributeValue> | undefined,
  ) {
    this.attributes = { ...attrs };
    this.start = tracer.now();
  }
  traceparent(): string {
    return `00-${this.traceId}-${this.spanId}-${this.flags}`;
  }
  setAttribute(key: string, value: AttributeValue): void {
    if (!this.ended) this.attributes[key] = value;
  }
  end(error?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.tracer.ended({
      traceId: this.traceId,
      spanId: this.spanId,
      parentSpanId: this.parentSpanId,
      name: this.name,
      kind: this.kind,
      start: this.start,
      end: this.tracer.now(),
      attributes: this.attributes,
      error,
    });
  }
}

/**
 * @example createGateway(config, { ..., tracer: new FetchTracer({ endpoint: "https://otel.example/v1/traces", serviceName: "tollgate", version }) })
 */
export class FetchTracer implements Tracer {
  /** Exported after each request (beside it), not on a timer: a Worker has no timers between requests. */
  readonly exportsPerRequest = true;
  private buffer: Ended[] = [];
  /** Spans dropped because the buffer was full, or because their export failed. */
  dropped = 0;
  readonly now: () => bigint;
  private readonly send: typeof fetch;
  private readonly resource: { attributes: ReturnType<typeof attributes> };

  constructor(private readonly o: FetchTracerOptions) {
    const origin = BigInt(Date.now()) * 1_000_000n - BigInt(Math.round(performance.now() * 1e6));
    this.now = o.clock ?? (() => origin + BigInt(Math.round(performance.now() * 1e6)));
    this.send = o.fetch ?? ((input, init) => fetch(input, init));
    this.resource = { attributes: attributes({ "service.name": o.serviceName, "service.version": o.version }) };
  }

  start(name: string, parent: Span | string | undefined, attrs?: Record<string, AttributeValue>, kind?: "client"): Span {
    let traceId: string | undefined;
    let parentSpanId: string | undefined;
    let flags = "01";
    if (parent instanceof FetchSpan) {
      traceId = parent.traceId;
      parentSpanId = parent.spanId;
      flags = parent.traceparent().slice(-2);
    } else if (typeof parent === "string") {
      const m = TRACEPARENT.exec(parent.trim().toLowerCase());
      if (m && m[1] !== ZERO_TRACE && m[2] !== ZERO_SPAN) [traceId, parentSpanId, flags] = [m[1], m[2], m[3]!];
    }
    const k = kind === "client" ? 3 : parent instanceof FetchSpan ? 1 : 2;
    return new FetchSpan(this, traceId ?? hex(16), hex(8), flags, parentSpanId, name, k, attrs);
  }

  /** @internal A span ended: buffered for the next export. */
  ended(s: Ended): void {
    if (this.buffer.length >= MAX_BUFFERED) {
      this.dropped++;
      return;
    }
    this.buffer.push(s);
  }

  /** Sends every buffered span, in batches; resolves once each batch is answered (or failed: its spans dropped). */
  async flush(): Promise<void> {
    while (this.buffer.length) {
      const batch = this.buffer.splice(0, BATCH);
      const body = JSON.stringify({
        resourceSpans: [
          {
            resource: this.resource,
            scopeSpans: [{ scope: { name: "tollgate", version: this.o.version }, spans: batch.map(otlpSpan) }],
          },
        ],
      });
      try {
        const res = await this.send(this.o.endpoint, { method: "POST", headers: { "content-type": "application/json" }, body });
        await res.body?.cancel().catch(() => {});
        if (!res.ok) throw new Error(`status ${res.status}`);
      } catch (err) {
        this.dropped += batch.length;
        throw new Error(`OTLP export to the traces endpoint failed (${(err as Error)?.message ?? err}); ${batch.length} spans dropped`);
      }
    }
  }
}

function otlpSpan(s: Ended) {
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: s.start.toString(),
    endTimeUnixNano: s.end.toString(),
    attributes: attributes(s.attributes),
    status: s.error ? { code: 2, message: s.error } : { code: 0 },
  };
}
