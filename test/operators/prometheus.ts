// Reads /_tollgate/metrics through a real Prometheus text parser and picks samples out of it, for the operator tests.
import { spawnSync } from "node:child_process";
import parsePrometheusTextFormat from "parse-prometheus-text-format";

export interface Family {
  name: string;
  help: string;
  type: string;
  metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }>;
}

export function parseExposition(text: string): Family[] {
  return parsePrometheusTextFormat(text) as Family[];
}

export async function scrape(url: string, headers: Record<string, string>): Promise<{ text: string; families: Family[] }> {
  const r = await fetch(`${url}/_tollgate/metrics`, { headers });
  if (r.status !== 200) throw new Error(`metrics answered ${r.status}: ${await r.text()}`);
  const text = await r.text();
  return { text, families: parseExposition(text) };
}

const matches = (have: Record<string, string> | undefined, want: Record<string, string>) =>
  Object.entries(want).every(([k, v]) => have?.[k] === v);

/** The sum of the samples of `name` whose labels include `labels` (0 when none). */
export function sampleSum(families: Family[], name: string, labels: Record<string, string> = {}): number {
  const f = families.find((x) => x.name === name);
  if (!f) return 0;
  return f.metrics.filter((m) => matches(m.labels, labels)).reduce((a, m) => a + Number(m.value ?? m.count ?? 0), 0);
}

/**
 * Histogram series of `name` whose labels include `labels`. parse-prometheus-text-format 1.1.1 folds the series of a
 * labelled histogram into one (it only handles unlabelled ones), so the series are read from the sample lines, which
 * the parser has already accepted as a whole.
 */
export function histogram(text: string, name: string, labels: Record<string, string> = {}) {
  const series = new Map<string, { labels: Record<string, string>; count: number; sum: number; buckets: Record<string, number> }>();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || !m[1]!.startsWith(name + "_")) continue;
    const suffix = m[1]!.slice(name.length + 1);
    if (!["bucket", "sum", "count"].includes(suffix)) continue;
    const l: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      l[k!] = v!.replace(/\\(.)/g, (_x, ch) => (ch === "n" ? "\n" : ch));
    const { le, ...rest } = l;
    if (!matches(rest, labels)) continue;
    const key = JSON.stringify(rest);
    const entry = series.get(key) ?? { labels: rest, count: 0, sum: 0, buckets: {} };
    if (suffix === "bucket") entry.buckets[le!] = Number(m[3]);
    else entry[suffix as "sum" | "count"] = Number(m[3]);
    series.set(key, entry);
  }
  return [...series.values()];
}

/**
 * `promtool check metrics` (Prometheus's own linter) on an exposition: its problems, one per line, or why it was
 * skipped (promtool not installed: scripts/setup.sh extracts it from Debian's prometheus package).
 */
export function promtoolCheck(text: string): { problems: string[]; skipped?: string } {
  const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8", timeout: 30_000 });
  if (r.error) return { problems: [], skipped: `promtool not runnable (${(r.error as NodeJS.ErrnoException).code})` };
  return { problems: `${r.stdout}${r.stderr}`.split("\n").filter((l) => l.trim()) };
}
