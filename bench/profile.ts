// Where a request's CPU goes, by step: `npm run bench -- profile`. For each scenario of bench/proxy.ts (default a, b,
// d, e) it runs that bench alone with the floor and Tollgate (or /health and Tollgate on the cache hit) under V8's
// sampling profiler (`--cpu-prof`), then reads Tollgate's profile over its measured window and sums the time by step of
// the request path (the files of each step: the access log and request record, identify, the route match, the
// relay...), self and inclusive. Each step's share of busy time times the run's CPU per request (utime + stime from
// /proc, as bench/proxy.ts reads it) is its µs per request. The profiler itself costs a few per cent: read the shares,
// and take the ratios from `npm run bench -- proxy` without it.
//
// BENCH_SCENARIOS (a,b,d,e), BENCH_PROFILE_KEEP=<dir> (keep the profiles there), BENCH_PROFILE_TOP (12: top functions
// per scenario), BENCH_PROFILE_FLOOR=1 (also the floor's profile by the same steps); the other BENCH_* knobs of
// bench/proxy.ts pass through (BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_STATE, BENCH_LOG_LEVEL...).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SCENARIOS = (process.env.BENCH_SCENARIOS ?? "a,b,d,e").split(",").map((s) => s.trim());
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 12);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const FLOOR = !!process.env.BENCH_PROFILE_FLOOR;
const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));

/** The steps of the request path, by the files that do them (first match wins); paths as `where()` names them. */
const STEPS: Array<[RegExp, string]> = [
  [/^middleware\/trace\/|^src\/telemetry\/(tracing|fetch-tracer)|^src\/host\/node\/otel-tracer/, "tracing"],
  [/^middleware\/access-log\/|^src\/telemetry\/(request-recorder|route-label)/, "access log fields, request record"],
  [/^src\/log\.js|^src\/host\/node\/log-sink/, "log line (format, redact, write)"],
  [/^src\/telemetry\/|^prom-client/, "metrics"],
  [/^middleware\/request-id\//, "request id"],
  [/^middleware\/identify\/|^src\/identity\/|^src\/oauth\//, "identify (key, token, revocation)"],
  [/^middleware\/rate-limit\//, "rate limit"],
  [/^middleware\/owner\/|^src\/state\/remembered-owners/, "owner"],
  [/^middleware\/body-(check|limit)\/|^src\/host\/node\/held-body/, "body (limit, held body, check)"],
  [/^middleware\/(quota|meter|placement)\//, "quota, meter, placement"],
  [
    /^middleware\/(valid-host|public-host|exposed-ports|cors|method-override|normalize)\/|^src\/host\/node\/upgrade-gate|^src\/web\/(forwarded|client-address|request-url)/,
    "normalise, host checks, client address",
  ],
  [/^src\/web\/remembering-router|^hono\/router\//, "route match"],
  [/^middleware\/(series|chain)/, "chain (series of steps)"],
  [/^src\/sandboxes\//, "runtime handler, custody"],
  [/^src\/search\/|^src\/payments\/|^src\/upstream\/cache/, "search handler, cache"],
  [
    /^src\/host\/node\/(direct-relay|relay-exchange|turn-writes|unread-headers|undici-transport|closing|request-headers)|^src\/web\/(transport|response-headers)|^src\/upstream\//,
    "relay, upstream call, answer headers",
  ],
  [/^src\/(host|web)\//, "entry, background work"],
  [/^src\/|^middleware\/|^config\//, "other gateway code"],
  [/^bench\//, "the bench's own code (the floor)"],
  [/^zod/, "zod"],
  [/^lru-cache/, "lru-cache"],
  [/^hono\//, "hono (context, compose, request)"],
  [/^@hono\/node-server/, "@hono/node-server (Request, Response)"],
  [/^undici/, "undici (the upstream's HTTP client)"],
  [/^node:/, "Node core JS (http, net, streams, timers)"],
  [/^\(garbage collector\)$/, "garbage collector"],
  [/.*/, "native (V8, libuv, syscalls)"],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A frame's place: `node_modules/<pkg>/…` → `<pkg>/<rest>`, the gateway's files from src/, middleware/, config/. */
function where(f: ProfileNode["callFrame"]): string {
  const url = f.url;
  if (!url) return f.functionName === "(garbage collector)" ? "(garbage collector)" : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + 13);
    return rest.replace(/^(@[^/]+\/[^/]+|[^/]+)\/(dist\/(esm\/|cjs\/)?|lib\/)?/, "$1/");
  }
  if (url.startsWith("node:")) return url;
  const i = Math.max(url.lastIndexOf("/src/"), url.lastIndexOf("/middleware/"), url.lastIndexOf("/config/"), url.lastIndexOf("/bench/"));
  return i >= 0 ? url.slice(i + 1) : url;
}

const stepOf = (place: string) => STEPS.find(([re]) => re.test(place))![1];

interface StepSummary {
  busyMs: number;
  /** Step → share of busy time in its own frames. */
  self: Map<string, number>;
  /** Step → share of busy time with one of its frames on the stack (gateway steps only; a step called by another counts in both). */
  inclusive: Map<string, number>;
  top: Array<[string, number]>;
}

/** Sums a profile's samples of its last `lastSeconds` (idle left out) by step. */
function summarise(prof: Profile, lastSeconds: number): StepSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of prof.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const at: number[] = [];
  for (let i = 0, t = 0; i < prof.samples.length; i++) at.push((t += prof.timeDeltas[i] ?? 0));
  const from = at[at.length - 1]! - lastSeconds * 1e6;
  const nodeStep = new Map<number, string>();
  const nodeKey = new Map<number, string>();
  for (const n of prof.nodes) {
    const place = where(n.callFrame);
    nodeStep.set(n.id, stepOf(place));
    nodeKey.set(n.id, `${n.callFrame.functionName || "(anonymous)"}  ${place}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ""}`);
  }
  const gatewayStep = (s: string) => STEPS.findIndex(([, name]) => name === s) < STEPS.findIndex(([, name]) => name === "zod");
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const byFn = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    if (at[i]! < from) continue;
    const id = prof.samples[i]!;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === "(idle)") continue;
    const dt = prof.timeDeltas[i] ?? 0;
    total += dt;
    const s = nodeStep.get(id)!;
    self.set(s, (self.get(s) ?? 0) + dt);
    byFn.set(nodeKey.get(id)!, (byFn.get(nodeKey.get(id)!) ?? 0) + dt);
    const seen = new Set<string>();
    for (let p: number | undefined = id; p !== undefined; p = parent.get(p)) {
      const ps = nodeStep.get(p)!;
      if (gatewayStep(ps)) seen.add(ps);
    }
    for (const ps of seen) inclusive.set(ps, (inclusive.get(ps) ?? 0) + dt);
  }
  const share = (m: Map<string, number>) => new Map([...m].map(([k, v]) => [k, total ? v / total : 0]));
  return {
    busyMs: total / 1000,
    self: share(self),
    inclusive: share(inclusive),
    top: [...byFn]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([k, v]) => [k, total ? v / total : 0]),
  };
}

/** The main thread's profile in `dir` (`--cpu-prof` under tsx also writes its loader thread's, the smaller one). */
function mainProfile(dir: string): Profile {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => join(dir, f));
  if (!files.length) throw new Error(`no profile in ${dir}`);
  const main = files.sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
  return JSON.parse(readFileSync(main, "utf8")) as Profile;
}

/** One scenario of bench/proxy.ts with profiles: the CPU µs per request of each contender (its table's rows). */
async function runProxyBench(id: string, dir: string): Promise<Map<string, number>> {
  const proxies = id === "d" ? "health,tollgate" : "node raw pipe,tollgate";
  const child = spawn(process.execPath, ["--import", "tsx", here("./proxy.ts")], {
    env: { ...process.env, BENCH_SCENARIOS: id, BENCH_PROXIES: proxies, BENCH_ROUNDS: "1", BENCH_PROFILE_DIR: dir },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  const status = await new Promise<number | null>((r) => child.once("exit", r));
  if (status !== 0) throw new Error(`bench/proxy.ts (scenario ${id}) failed with ${status}`);
  const cpu = new Map<string, number>();
  for (const line of out.split("\n")) {
    const cells = line.split("|").map((s) => s.trim());
    if (cells.length > 7 && /^\([a-z]\)/.test(cells[1]!)) cpu.set(cells[2]!.replace(/ #\d+$/, ""), Number(cells[6]));
  }
  return cpu;
}

const NAMES: Record<string, string> = { a: "runtime-get", b: "runtime-post", c: "port-get", d: "cache-hit", e: "fast-get" };
const PROCESS: Record<string, string> = {
  a: "tollgate-emulator",
  b: "tollgate-emulator",
  c: "tollgate-emulator",
  d: "tollgate-fast",
  e: "tollgate-fast",
};
const FLOOR_PROCESS: Record<string, string> = { a: "floor-emulator", b: "floor-emulator", e: "floor-fast" };

const keep = process.env.BENCH_PROFILE_KEEP;
const root = keep ?? mkdtempSync(join(tmpdir(), "tollgate-profile-"));
const results: Array<{ id: string; tollgateUs: number; baseUs: number; base: string; sum: StepSummary; floor?: StepSummary }> = [];
try {
  for (const id of SCENARIOS) {
    const dir = join(root, id);
    rmSync(dir, { recursive: true, force: true });
    console.error(`profiling scenario ${id} (${NAMES[id]})…`);
    const cpu = await runProxyBench(id, dir);
    const base = id === "d" ? "health" : "node raw pipe";
    // The window: the measured seconds, and the last of the warm-up (Tollgate is the last contender measured).
    const sum = summarise(mainProfile(join(dir, PROCESS[id]!)), SECONDS + 1);
    const floorDir = FLOOR_PROCESS[id] && join(dir, FLOOR_PROCESS[id]!);
    const floor = FLOOR && floorDir && existsSync(floorDir) ? summarise(mainProfile(floorDir), SECONDS + 1) : undefined;
    results.push({ id, tollgateUs: cpu.get("tollgate") ?? NaN, baseUs: cpu.get(base) ?? NaN, base, sum, floor });
  }
  const date = new Date().toISOString().slice(0, 10);
  console.log(`\n## Step profile: Tollgate's CPU per request by step (${date}, --cpu-prof, the measured window)\n`);
  console.log(
    results
      .map(
        (r) =>
          `(${r.id}) ${NAMES[r.id]}: Tollgate ${r.tollgateUs.toFixed(0)} µs/request, ${r.base} ${r.baseUs.toFixed(0)} (${(r.tollgateUs / r.baseUs).toFixed(2)}×, profiled), ${r.sum.busyMs.toFixed(0)} ms of samples`,
      )
      .join("\n"),
  );
  const steps = STEPS.map(([, s]) => s).filter((s) => results.some((r) => (r.sum.self.get(s) ?? 0) >= 0.001));
  const head = results.map((r) => `(${r.id}) µs`).join(" | ");
  console.log(`\nself time (the step's own frames), µs per request ≈ share of busy time × the run's CPU per request:\n`);
  console.log(`| step | ${head} | ${results.map((r) => `(${r.id}) %`).join(" | ")} |`);
  console.log(`|---|${results.map(() => "---|").join("")}${results.map(() => "---|").join("")}`);
  for (const s of steps)
    console.log(
      `| ${s} | ${results.map((r) => ((r.sum.self.get(s) ?? 0) * r.tollgateUs).toFixed(1)).join(" | ")} | ${results
        .map((r) => ((r.sum.self.get(s) ?? 0) * 100).toFixed(1))
        .join(" | ")} |`,
    );
  const incl = STEPS.map(([, s]) => s).filter((s) => results.some((r) => (r.sum.inclusive.get(s) ?? 0) >= 0.001));
  console.log(`\ninclusive (a frame of the step anywhere on the stack, what it calls included), µs per request:\n`);
  console.log(`| step | ${head} |\n|---|${results.map(() => "---|").join("")}`);
  for (const s of incl)
    console.log(`| ${s} | ${results.map((r) => ((r.sum.inclusive.get(s) ?? 0) * r.tollgateUs).toFixed(1)).join(" | ")} |`);
  for (const r of results) {
    console.log(`\n(${r.id}) ${NAMES[r.id]}: top ${TOP} functions by self time`);
    for (const [k, v] of r.sum.top) console.log(`${(v * 100).toFixed(1).padStart(5)}%  ${k}`);
    if (r.floor) {
      console.log(`\n(${r.id}) the floor's own profile by the same steps (${r.baseUs.toFixed(0)} µs/request):`);
      for (const [s, v] of [...r.floor.self].sort((a, b) => b[1] - a[1]))
        if (v >= 0.005) console.log(`${(v * 100).toFixed(1).padStart(5)}%  ${(v * r.baseUs).toFixed(1).padStart(6)} µs  ${s}`);
    }
  }
  if (keep) console.log(`\nprofiles kept in ${keep} (bench/profile-top.ts reads one)`);
} finally {
  if (!keep) rmSync(root, { recursive: true, force: true });
}
