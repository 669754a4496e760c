// The metrics interface the request chain writes to: labelled counters, gauges and histograms, rendered as Prometheus
// text by the in-process TextRegistry (Workers, tests); Node adds prom-client's process metrics (src/host/node/prom-registry.ts).

export interface CounterChild {
  inc(by?: number): void;
}

export interface GaugeChild {
  set(value: number): void;
  inc(by?: number): void;
  dec(by?: number): void;
}

export interface HistogramChild {
  observe(value: number): void;
}

/** A metric family; `labels(...)` takes the values in the order of the family's label names. */
export interface MetricFamily<Child> {
  labels(...values: string[]): Child;
  /** Forgets every child (scrape-time gauges are rebuilt from scratch on each scrape). */
  reset(): void;
}

export interface MetricDefinition {
  name: string;
  help: string;
  labelNames: readonly string[];
}

export interface MetricsRegistry {
  counter(def: MetricDefinition): MetricFamily<CounterChild>;
  gauge(def: MetricDefinition): MetricFamily<GaugeChild>;
  histogram(def: MetricDefinition & { buckets: readonly number[] }): MetricFamily<HistogramChild>;
  /** The exposition in Prometheus text format 0.0.4. */
  render(): Promise<string>;
  readonly contentType: string;
}
