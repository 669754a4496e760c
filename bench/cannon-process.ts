// One load run for bench/proxy.ts, in its own process so the load generator never shares the proxy's or the upstream's
// event loop. Reads a JSON job from argv[2]: warm-up, then the measured run bracketed by the CPU ticks (utime+stime
// from /proc/<pid>/stat) of the proxy's processes. Prints one JSON line with req/s, latencies and CPU.
import autocannon from "autocannon";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { pacedLoad } from "./paced-load.js";

interface Job {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
  warmupSeconds: number;
  /** Warm-up goes on past warmupSeconds (up to 2×) until this many requests were served. */
  warmupRequests?: number;
  /** Processes whose CPU is the proxy's: each pid and, when `tree`, its direct children (nginx's workers). */
  pids: number[];
  tree?: boolean;
  /** Requests per second over all connections (autocannon's overallRate); unset: as fast as the proxy answers. */
  rate?: number;
  /** A file for `strace -c -f` of the first pid over the measured window (BENCH_STRACE): its syscalls, counted. */
  strace?: string;
  /** The measured run sent at this steady rate (req/s; ./paced-load.ts) instead of flat out (BENCH_PACED). */
  paced?: number;
}

const job = JSON.parse(process.argv[2]!) as Job;

function ticksOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]); // fields 14 and 15: utime, stime
  } catch {
    return 0;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const procs = () => job.pids.flatMap((p) => (job.tree ? [p, ...childrenOf(p)] : [p]));
const cpuTicks = () => procs().reduce((s, p) => s + ticksOf(p), 0);

const opts = { url: job.url, method: job.method ?? "GET", headers: job.headers ?? {}, body: job.body, connections: job.connections };
if (job.warmupSeconds > 0) {
  const started = Date.now();
  let served = 0;
  do served += (await autocannon({ ...opts, duration: 1 })).requests.total;
  while (
    Date.now() - started < job.warmupSeconds * 1000 ||
    (served < (job.warmupRequests ?? 0) && Date.now() - started < job.warmupSeconds * 2000)
  );
}
// BENCH_STRACE: strace attached after the warm-up (it slows the process, so the CPU figure of such a run is not one to read).
const tracer = job.strace
  ? spawn("strace", ["-c", "-f", "-o", job.strace, "-p", String(job.pids[0])], { stdio: ["ignore", "ignore", "pipe"] })
  : undefined;
if (tracer) await new Promise<void>((resolve) => tracer.stderr!.once("data", () => resolve())); // "strace: Process … attached"
/** The answers that were not 2xx, by status, and the timeouts among the errors. */
function badOf(r: { statusCodeStats?: Record<string, { count: number }>; timeouts?: number }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) if (!code.startsWith("2") && s.count) out[code] = s.count;
  if (r.timeouts) out.timeouts = r.timeouts;
  return out;
}
function badLabel(n: number, by: Record<string, number>): string {
  const parts = Object.entries(by).map(([k, v]) => `${k}×${v}`);
  return n && parts.length ? `${n} (${parts.join(", ")})` : String(n);
}
const before = cpuTicks();
const r = job.paced
  ? await pacedLoad({ ...opts, rate: job.paced, seconds: job.seconds }).then((p) => ({
      requests: { average: p.rps, total: p.total },
      latency: { p50: p.p50, p99: p.p99 },
      non2xx: p.non2xx,
      errors: p.errors,
    }))
  : await autocannon({ ...opts, duration: job.seconds, ...(job.rate ? { overallRate: job.rate } : {}) });
const after = cpuTicks();
if (tracer) {
  const exited = new Promise((resolve) => tracer.once("exit", resolve));
  tracer.kill("SIGINT");
  await exited;
}
process.stdout.write(
  JSON.stringify({
    rps: r.requests.average,
    total: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    // The bad count with what it was (`12 (500×12)`, `1 (timeouts×1)`), as the benches' tables print it.
    bad: badLabel(r.non2xx + r.errors, badOf(r as Parameters<typeof badOf>[0])),
    cpuTicks: after - before,
  }) + "\n",
);
