// Node's metrics registry on prom-client, with the process's own metrics (CPU, memory, event-loop lag, GC) beside ours.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { CounterChild, GaugeChild, HistogramChild, MetricDefinition, MetricFamily, MetricsRegistry } from "../metrics/types.js";

/** Children cached per label set, so the hot path does one Map lookup instead of prom-client's per-call label checks. */
function cached<C>(make: (values: string[]) => C, reset: () => void): MetricFamily<C> {
  const children = new Map<string, C>();
  return {
    labels(...values: string[]) {
      const key = values.length === 1 ? values[0]! : values.join("\u0000");
      let c = children.get(key);
      if (!c) {
        c = make(values);
        children.set(key, c);
      }
      return c;
    },
    reset() {
      children.clear();
      reset();
    },
  };
}

export function promRegistry(opts: { defaultMetrics?: boolean } = {}): MetricsRegistry {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const labelsOf = (def: MetricDefinition, values: string[]) => Object.fromEntries(def.labelNames.map((n, i) => [n, values[i] ?? ""]));
  return {
    contentType: registry.contentType,
    counter(def): MetricFamily<CounterChild> {
      const m = new Counter({ name: def.name, help: def.help, labelNames: [...def.labelNames], registers: [registry] });
      return cached((v) => m.labels(labelsOf(def, v)), () => m.reset());
    },
    gauge(def): MetricFamily<GaugeChild> {
      const m = new Gauge({ name: def.name, help: def.help, labelNames: [...def.labelNames], registers: [registry] });
      return cached((v) => m.labels(labelsOf(def, v)), () => m.reset());
    },
    histogram(def): MetricFamily<HistogramChild> {
      const m = new Histogram({ name: def.name, help: def.help, labelNames: [...def.labelNames], buckets: [...def.buckets], registers: [registry] });
      return cached((v) => m.labels(labelsOf(def, v)), () => m.reset());
    },
    render: () => registry.metrics(),
  };
}
