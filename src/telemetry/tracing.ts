// Traces, as the core sees them: a Tracer that starts spans from a W3C `traceparent` or a parent span, and a span
// that ends with an error or not and says its own traceparent (sent upstream). The Node entry passes one that exports
// over OTLP/HTTP (src/host/node/otel-tracer.ts) when `tracing.otlpEndpoint` is set, the Worker entry one that exports
// with fetch (./fetch-tracer.ts); without one nothing is traced and
// nothing costs anything (no middleware mounted, no wrapper, one property check per upstream call).
import type { Context, MiddlewareHandler } from "hono";

export interface Span {
  readonly traceId: string;
  /** `00-<trace id>-<span id>-<flags>`: what a call made inside this span sends as `traceparent`. */
  traceparent(): string;
  setAttribute(key: string, value: string | number | boolean): void;
  /** Ends the span; `error` marks it failed with that description. Later calls do nothing. */
  end(error?: string): void;
}

export interface Tracer {
  /** A span whose parent is `parent` (a span, or an incoming `traceparent` value); a new trace when there is none. */
  start(name: string, parent: Span | string | undefined, attributes?: Record<string, string | number | boolean>, kind?: "client"): Span;
  /** Sends what is buffered (at close; after each request too when `exportsPerRequest`). */
  flush(): Promise<void>;
  /** True for a tracer with no timer of its own (Workers): each request's spans are sent beside it (middleware/trace). */
  readonly exportsPerRequest?: boolean;
}

declare module "hono" {
  interface ContextVariableMap {
    /** The request's span, set by traceRequests() when tracing is on. */
    span: Span;
  }
}

/** A child of the request's span, or undefined when the request is not traced. */
export function childSpan(c: Context | undefined, tracer: Tracer | undefined, name: string, kind?: "client"): Span | undefined {
  if (!tracer || !c) return undefined;
  const parent = c.get("span");
  return parent ? tracer.start(name, parent, undefined, kind) : undefined;
}

/**
 * Wraps a chain step in a span of its own name covering the step's own work (its wait for the steps after it is
 * not counted). A step that throws ends its span with the error.
 */
export function tracedStep<M extends MiddlewareHandler>(tracer: Tracer, name: string, step: M): M {
  const traced: MiddlewareHandler = async (c, next) => {
    const span = childSpan(c, tracer, name);
    if (!span) return step(c, next);
    try {
      return await step(c, async () => {
        span.end();
        await next();
      });
    } catch (err) {
      span.end(String((err as { code?: string })?.code ?? (err as Error)?.message ?? err));
      throw err;
    } finally {
      span.end();
    }
  };
  Object.defineProperty(traced, "name", { value: step.name });
  return traced as M;
}
