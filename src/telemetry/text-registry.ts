// In-process metrics that render Prometheus text themselves (Web standards only): the Workers and default registry.
// On Workers every isolate keeps its own counters; see docs/metrics.md for the platform's fleet-wide options.
import type { CounterChild, GaugeChild, HistogramChild, MetricDefinition, MetricFamily, MetricsRegistry } from "./types.js";

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");

function formatNumber(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** `{a="x",b="y"}` for the given names and values, rendered once per child. */
function labelText(names: readonly string[], values: readonly string[], extra?: string): string {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i] ?? "")}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

abstract class Family<Child> implements MetricFamily<Child> {
  protected readonly children = new Map<string, { values: string[]; child: Child }>();
  constructor(
    readonly def: MetricDefinition,
    readonly type: "counter" | "gauge" | "histogram",
  ) {}

  protected abstract make(values: string[]): Child;

  labels(...values: string[]): Child {
    const key = values.length === 1 ? values[0]! : values.join("\u0000");
    let entry = this.children.get(key);
    if (!entry) {
      entry = { values, child: this.make(values) };
      this.children.set(key, entry);
    }
    return entry.child;
  }

  reset(): void {
    this.children.clear();
  }

  header(): string {
    return `# HELP ${this.def.name} ${escapeHelp(this.def.help)}\n# TYPE ${this.def.name} ${this.type}\n`;
  }

  abstract render(): string;
}

class Counter extends Family<CounterChild & { value: number }> {
  protected make() {
    return {
      value: 0,
      inc(by = 1) {
        if (by > 0) this.value += by;
      },
    };
  }
  render(): string {
    let out = this.header();
    for (const { values, child } of this.children.values())
      out += `${this.def.name}${labelText(this.def.labelNames, values)} ${formatNumber(child.value)}\n`;
    return out;
  }
}

class Gauge extends Family<GaugeChild & { value: number }> {
  protected make() {
    return {
      value: 0,
      set(v: number) {
        this.value = v;
      },
      inc(by = 1) {
        this.value += by;
      },
      dec(by = 1) {
        this.value -= by;
      },
    };
  }
  render(): string {
    let out = this.header();
    for (const { values, child } of this.children.values())
      out += `${this.def.name}${labelText(this.def.labelNames, values)} ${formatNumber(child.value)}\n`;
    return out;
  }
}

interface HistogramState extends HistogramChild {
  counts: Float64Array;
  sum: number;
  count: number;
}

class Histogram extends Family<HistogramState> {
  constructor(
    def: MetricDefinition,
    private readonly buckets: readonly number[],
  ) {
    super(def, "histogram");
  }
  protected make(): HistogramState {
    const buckets = this.buckets;
    return {
      counts: new Float64Array(buckets.length),
      sum: 0,
      count: 0,
      observe(v: number) {
        // Non-cumulative per bucket; cumulated at render time, so an observation touches one slot.
        let i = 0;
        while (i < buckets.length && v > buckets[i]!) i++;
        if (i < buckets.length) this.counts[i]!++;
        this.sum += v;
        this.count++;
      },
    };
  }
  render(): string {
    let out = this.header();
    const n = this.def.name;
    for (const { values, child } of this.children.values()) {
      let cumulative = 0;
      this.buckets.forEach((b, i) => {
        cumulative += child.counts[i]!;
        out += `${n}_bucket${labelText(this.def.labelNames, values, `le="${formatNumber(b)}"`)} ${cumulative}\n`;
      });
      out += `${n}_bucket${labelText(this.def.labelNames, values, 'le="+Inf"')} ${child.count}\n`;
      out += `${n}_sum${labelText(this.def.labelNames, values)} ${formatNumber(child.sum)}\n`;
      out += `${n}_count${labelText(this.def.labelNames, values)} ${child.count}\n`;
    }
    return out;
  }
}

/** A registry that keeps its values in this isolate's memory and writes the text exposition itself. */
export class TextRegistry implements MetricsRegistry {
  readonly contentType = "text/plain; version=0.0.4; charset=utf-8";
  private readonly families: Array<Counter | Gauge | Histogram> = [];

  counter(def: MetricDefinition): MetricFamily<CounterChild> {
    return this.add(new Counter(def, "counter"));
  }
  gauge(def: MetricDefinition): MetricFamily<GaugeChild> {
    return this.add(new Gauge(def, "gauge"));
  }
  histogram(def: MetricDefinition & { buckets: readonly number[] }): MetricFamily<HistogramChild> {
    return this.add(
      new Histogram(
        def,
        [...def.buckets].sort((a, b) => a - b),
      ),
    );
  }

  private add<F extends Counter | Gauge | Histogram>(f: F): F {
    if (this.families.some((x) => x.def.name === f.def.name)) throw new Error(`metric ${f.def.name} is defined twice`);
    this.families.push(f);
    return f;
  }

  async render(): Promise<string> {
    return this.families.map((f) => f.render()).join("");
  }
}
