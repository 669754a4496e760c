// Summarises a V8 .cpuprofile (node --cpu-prof): top self-time functions, and self time by package / source file.
// `npx tsx bench/profile-top.ts <file.cpuprofile> [top=25] [last-seconds]` (last-seconds: only the end of the profile,
// i.e. the measured window, not start-up).
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
const prof = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const top = Number(process.argv[3] ?? 25);
const lastUs = Number(process.argv[4] ?? 0) * 1e6;
const at: number[] = [];
for (let i = 0, t = 0; i < prof.samples.length; i++) at.push((t += prof.timeDeltas[i] ?? 0));
const from = lastUs ? at[at.length - 1]! - lastUs : -Infinity;
const self = new Map<number, number>();
for (let i = 0; i < prof.samples.length; i++)
  if (at[i]! >= from) self.set(prof.samples[i]!, (self.get(prof.samples[i]!) ?? 0) + (prof.timeDeltas[i] ?? 0));
// Idle time is dropped: percentages are of the time the process was busy.
for (const n of prof.nodes) if (n.callFrame.functionName === "(idle)") self.delete(n.id);
const total = [...self.values()].reduce((a, b) => a + b, 0);
const where = (url: string) => {
  if (!url) return "(native/V8)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const p = url.slice(nm + 13).split("/");
    return p[0]!.startsWith("@") ? `${p[0]}/${p[1]}` : p[0]!;
  }
  if (url.startsWith("node:")) return url;
  const i =
    url.indexOf("/bench/") >= 0
      ? url.indexOf("/bench/")
      : Math.max(url.indexOf("/src/"), url.indexOf("/middleware/"), url.indexOf("/config/"));
  return i >= 0 ? url.slice(i + 1) : url;
};
const byFn = new Map<string, number>();
const byPkg = new Map<string, number>();
for (const n of prof.nodes) {
  const t = self.get(n.id) ?? 0;
  if (!t) continue;
  const f = n.callFrame;
  const k = `${f.functionName || "(anonymous)"}  ${where(f.url)}${f.url ? `:${f.lineNumber + 1}` : ""}`;
  byFn.set(k, (byFn.get(k) ?? 0) + t);
  const p = where(f.url).replace(/^node:.*/, "node: (core JS)");
  byPkg.set(p, (byPkg.get(p) ?? 0) + t);
}
const pct = (t: number) => `${((100 * t) / total).toFixed(1)}%`.padStart(6);
console.log(`busy ${(total / 1000).toFixed(0)} ms (idle excluded)\n\nself time by package / file:`);
for (const [k, t] of [...byPkg].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${pct(t)}  ${k}`);
console.log(`\ntop ${top} functions by self time:`);
for (const [k, t] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${k}`);
