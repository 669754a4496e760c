// CPU per request of the Tollgate Worker against a bare pass-through Worker, both in workerd (through Miniflare, each
// in its own workerd process) in front of the same fast upstream (bench/fast-upstream-process.ts). On Workers CPU time
// is what the operator is billed for; here it is the workerd process's own utime+stime from /proc over the measured
// window (Miniflare's small entry worker runs in that process for both contenders).
//
//   runtime-get  GET  /sandbox/<id>/processes  (Tollgate: gateway token, custody, relay; bare: bearer injected)
//   cache-hit    POST /api/web/search, a cached answer (bare: passes every call to the upstream)
//
// `npm run bench -- worker`; BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (3), BENCH_CONNECTIONS (32), BENCH_ROUNDS (2:
// each contender measured that many times, alternating, for a range), BENCH_WORKER_DIR reuses a bundle built beforehand,
// BENCH_WORKER_STATE=memory runs the Tollgate Worker without its Durable Object (state in the isolate),
// BENCH_PROFILE_DIR=<dir> writes a CPU profile of the Tollgate Worker's isolate (workerd's inspector, V8's sampling
// profiler) over each of its measured windows, `worker-<scenario>-<round>.cpuprofile`, for bench/profile-top.ts.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { request } from "undici";
import type { Readable } from "node:stream";
import WebSocket from "ws";
import { generateTenantKey, hashTenantKey } from "../src/identity/tenants.js";
import { TokenService } from "../src/identity/tokens.js";
import { memoryStores } from "../src/state/memory.js";
import { exampleBenchConfig } from "./example-config.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
/** BENCH_PACED: each measured run sent at this steady rate (req/s) instead of flat out, as in bench/proxy.ts. */
const PACED = Number(process.env.BENCH_PACED ?? 0);
const COMPAT_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync("wrangler.toml", "utf8"))![1]!;
const CLK_TCK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));
/** CPU per request of the Tollgate Worker over a bare Worker's, at most (issue 55): a relayed runtime GET, a cache hit. */
const WORKER_GOALS: Array<[scenario: string, goal: number]> = [
  ["runtime-get", 1.5],
  ["cache-hit", 1.0],
];

/** The plainest pass-through: the client's request to the same upstream, with the upstream credential injected. */
const BARE = `export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    const h = new Headers(req.headers);
    h.delete("host");
    if (u.pathname.startsWith("/api/")) h.set("x-api-key", env.UPSTREAM_KEY);
    else h.set("authorization", "Bearer " + env.RUNTIME_TOKEN);
    return fetch(env.UPSTREAM + u.pathname + u.search, { method: req.method, headers: h, body: req.body, redirect: "manual" });
  },
};
`;

function build(): string {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-worker-bench-"));
  execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", dir], {
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  return dir;
}

const childrenOf = (pid: number): number[] =>
  readdirSync(`/proc/${pid}/task`).flatMap((t) => {
    try {
      return readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  });
const commOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
};
/** Every workerd process under this one (Miniflare starts it as a child, sometimes through a shell). */
function workerdPids(): Set<number> {
  const out = new Set<number>();
  const walk = (p: number, depth: number) => {
    for (const c of childrenOf(p)) {
      if (commOf(c) === "workerd") out.add(c);
      else if (depth < 3) walk(c, depth + 1);
    }
  };
  walk(process.pid, 0);
  return out;
}

/** A Worker in its own Miniflare (so its own workerd process): its URL and that process's pid. */
async function startWorker(scriptPath: string, bindings: Record<string, string>, withState = false, inspect = false) {
  const before = workerdPids();
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    ...(inspect ? { inspectorPort: 0 } : {}),
    modules: true,
    modulesRoot: dirname(scriptPath),
    scriptPath,
    compatibilityDate: COMPAT_DATE,
    compatibilityFlags: ["nodejs_compat"],
    bindings,
    // The access log's lines (one a request, as deployed) are read and dropped, as bench/proxy.ts does with Node's; the
    // gateway's error lines and workerd's own errors still show.
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      createInterface({ input: stdout }).on("line", (line) => {
        if (line.includes('"level":"error"')) process.stderr.write(`${line}\n`);
      });
      stderr.pipe(process.stderr);
    },
    // The Tollgate Worker as deployed (wrangler.toml): shared state in a SQLite-backed Durable Object, in the same process.
    ...(withState ? { durableObjects: { TOLLGATE_STATE: { className: "TollgateState", useSQLite: true } } } : {}),
  });
  const url = (await mf.ready).origin;
  const pid = [...workerdPids()].find((p) => !before.has(p));
  if (!pid) throw new Error("could not find the workerd process Miniflare started");
  const profiler = inspect ? await isolateProfiler(mf) : undefined;
  return { url, pid, stop: () => (profiler?.close(), mf.dispose()), profiler };
}

/** V8's sampling profiler of the Worker's isolate, over workerd's inspector: `start()`, then `stop()` for the profile (again per window). */
async function isolateProfiler(mf: Miniflare) {
  const base = new URL("/json", await mf.getInspectorURL());
  base.protocol = "http:";
  const targets = (await (await request(base)).body.json()) as Array<{ title?: string; webSocketDebuggerUrl: string }>;
  const target = targets.find((t) => !t.title?.includes("miniflare")) ?? targets[0];
  if (!target) throw new Error("workerd's inspector lists no isolate");
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((ok, fail) => ws.once("open", ok).once("error", fail));
  let id = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.on("message", (m) => {
    const msg = JSON.parse(String(m)) as { id?: number; result?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result);
  });
  const send = (method: string, params: object = {}) =>
    new Promise<unknown>((ok) => {
      waiting.set(++id, ok);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 100 });
  return {
    start: () => send("Profiler.start"),
    stop: async () => ((await send("Profiler.stop")) as { profile: unknown }).profile,
    close: () => ws.close(),
  };
}

interface Load {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

async function measure(load: Load, pid: number) {
  const job = {
    ...load,
    connections: CONNECTIONS,
    seconds: SECONDS,
    warmupSeconds: WARMUP,
    warmupRequests: 3000,
    pids: [pid],
    ...(PACED ? { paced: PACED } : {}),
  };
  const child = spawn(process.execPath, ["--import", "tsx", here("./cannon-process.ts"), JSON.stringify(job)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  const status = await new Promise<number | null>((r) => child.once("exit", r));
  if (status !== 0) throw new Error(`load run failed (${status})`);
  const j = JSON.parse(out.trim().split("\n").pop()!);
  return {
    rps: j.rps as number,
    p99: j.p99 as number,
    cpuUs: ((j.cpuTicks / CLK_TCK) * 1e6) / j.total,
    bad: j.bad as string,
  };
}

async function expectOk(load: Load, what: string, header?: [string, string]) {
  const r = await request(load.url, { method: (load.method ?? "GET") as "GET", headers: load.headers, body: load.body });
  const text = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`${what}: ${r.statusCode} ${text.slice(0, 200)}`);
  if (header && r.headers[header[0]] !== header[1]) throw new Error(`${what}: ${header[0]} is ${r.headers[header[0]]}, not ${header[1]}`);
}

const stops: Array<() => Promise<unknown> | unknown> = [];
const given = process.env.BENCH_WORKER_DIR;
const dir = given ?? build();
if (!given) stops.push(() => rmSync(dir, { recursive: true, force: true }));
try {
  const fast = spawn(process.execPath, ["--import", "tsx", here("./fast-upstream-process.ts")], {
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  stops.push(() => process.kill(fast.pid!, "SIGTERM"));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    fast.stdout!.on("data", (d) => {
      out += d;
      const m = /READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    fast.once("exit", (c) => reject(new Error(`fast upstream exited ${c}`)));
  });
  const upstream = `http://127.0.0.1:${port}`;

  const key = generateTenantKey();
  const tokenSecret = randomBytes(32).toString("hex");
  const withState = process.env.BENCH_WORKER_STATE !== "memory";
  // The example configuration (bench/example-config.ts): its tenant's rate limit, quotas and request log, its cache,
  // credits and payments; logging on, as deployed (each request's access log line through console.log).
  const config = exampleBenchConfig({
    upstream: { baseUrl: upstream, allowedHosts: [] },
    keyHash: await hashTenantKey(key),
    adminKeyHash: await hashTenantKey(generateTenantKey()),
    logLevel: process.env.BENCH_LOG_LEVEL,
    durableObjects: withState,
    worker: true,
  });
  const tollgate = await startWorker(
    join(dir, "worker.js"),
    {
      TOLLGATE_CONFIG: JSON.stringify(config),
      TOLLGATE_UPSTREAM_API_KEY: "fast-upstream-key",
      TOLLGATE_TOKEN_SECRET: tokenSecret,
    },
    withState,
    !!PROFILE_DIR,
  );
  stops.push(() => tollgate.stop());
  // BENCH_WORKER_BASE_DIR: an older revision's bundle (`wrangler deploy --dry-run --outdir <dir>` in its checkout), as `Tollgate Worker@base`.
  const baseDir = process.env.BENCH_WORKER_BASE_DIR;
  const tollgateBase = baseDir
    ? await startWorker(
        join(baseDir, "worker.js"),
        { TOLLGATE_CONFIG: JSON.stringify(config), TOLLGATE_UPSTREAM_API_KEY: "fast-upstream-key", TOLLGATE_TOKEN_SECRET: tokenSecret },
        withState,
      )
    : undefined;
  if (tollgateBase) stops.push(() => tollgateBase.stop());
  const barePath = join(dir, "bare.js");
  writeFileSync(barePath, BARE);
  const bare = await startWorker(barePath, {
    UPSTREAM: upstream,
    UPSTREAM_KEY: "fast-upstream-key",
    RUNTIME_TOKEN: "fast-upstream-runtime-token",
  });
  stops.push(() => bare.stop());

  const minter = new TokenService(tokenSecret, memoryStores().kv);
  const token = (await minter.mint({ tenant: "bench", kind: "sandbox", resource: "sbx_fast", scopes: ["runtime"], ttlSeconds: 3600 }))
    .token;
  const json = { "content-type": "application/json" };
  const search = JSON.stringify({ query: "hot cached query" });
  const onBase = (l: Load): Load | undefined => (tollgateBase ? { ...l, url: l.url.replace(tollgate.url, tollgateBase.url) } : undefined);
  const scenarios: Array<{ name: string; worker: Load; bare: Load; base?: Load }> = [
    {
      name: "runtime-get",
      worker: { url: `${tollgate.url}/sandbox/sbx_fast/processes`, headers: { authorization: `Bearer ${token}` } },
      bare: { url: `${bare.url}/sandbox/sbx_fast/processes` },
    },
    {
      name: "cache-hit",
      worker: { url: `${tollgate.url}/api/web/search`, method: "POST", headers: { ...json, "x-api-key": key }, body: search },
      bare: { url: `${bare.url}/api/web/search`, method: "POST", headers: json, body: search },
    },
  ];
  for (const s of scenarios) s.base = onBase(s.worker);
  for (const s of scenarios) {
    if (s.base) await expectOk(s.base, `${s.name} via the base Tollgate Worker`);
    await expectOk(s.worker, `${s.name} via the Tollgate Worker`);
    await expectOk(s.bare, `${s.name} via the bare Worker`);
  }
  await expectOk(scenarios[1]!.worker, "cache hit", ["x-tollgate-cache", "hit"]);

  console.log(
    `\n## Workers: Tollgate vs a bare pass-through Worker (workerd via Miniflare, ${CONNECTIONS} connections${PACED ? `, paced at ${PACED} req/s` : ", flat out"}, ${WARMUP} s warm-up + ${SECONDS} s, ${ROUNDS} rounds, ${new Date().toISOString().slice(0, 10)})\n`,
  );
  console.log("| scenario | worker | round | req/s | p99 ms | CPU µs/req | non-2xx/errors |\n|---|---|---|---|---|---|---|");
  const ratios = new Map<string, { cpu: number[]; rps: number[]; base: number[] }>();
  for (const s of scenarios) {
    const r = { cpu: [] as number[], rps: [] as number[], base: [] as number[] };
    ratios.set(s.name, r);
    for (let i = 0; i < ROUNDS; i++) {
      const b = await measure(s.bare, bare.pid);
      await tollgate.profiler?.start();
      const t = await measure(s.worker, tollgate.pid);
      if (tollgate.profiler && PROFILE_DIR) {
        mkdirSync(PROFILE_DIR, { recursive: true });
        writeFileSync(join(PROFILE_DIR, `worker-${s.name}-${i + 1}.cpuprofile`), JSON.stringify(await tollgate.profiler.stop()));
      }
      for (const [who, m] of [
        ["bare Worker", b],
        ["Tollgate Worker", t],
      ] as const)
        console.log(`| ${s.name} | ${who} | ${i + 1} | ${Math.round(m.rps)} | ${m.p99} | ${m.cpuUs.toFixed(0)} | ${m.bad} |`);
      r.cpu.push(t.cpuUs / b.cpuUs);
      r.rps.push(t.rps / b.rps);
      if (s.base && tollgateBase) {
        const o = await measure(s.base, tollgateBase.pid);
        console.log(`| ${s.name} | Tollgate Worker@base | ${i + 1} | ${Math.round(o.rps)} | ${o.p99} | ${o.cpuUs.toFixed(0)} | ${o.bad} |`);
        r.base.push(o.cpuUs / b.cpuUs);
      }
    }
  }
  console.log("");
  const range = (xs: number[]) =>
    Math.min(...xs) === Math.max(...xs) ? xs[0]!.toFixed(2) : `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  for (const [name, r] of ratios) {
    console.log(`cpu/request worker÷bare-worker ${name}: ${range(r.cpu)}`);
    console.log(`req/s worker÷bare-worker ${name}: ${range(r.rps)}`);
    if (r.base.length) console.log(`cpu/request worker@base÷bare-worker ${name}: ${range(r.base)}`);
  }
  // Issue 55's goals for the Worker, judged on this run alone: the median of the same-round ratios, and how many rounds met it.
  const median = (xs: number[]) => {
    const v = [...xs].sort((a, b) => a - b);
    return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
  };
  const judged = WORKER_GOALS.flatMap(([name, goal]) => {
    const xs = ratios.get(name)?.cpu ?? [];
    if (!xs.length) return [];
    const value = median(xs);
    const met = value <= goal;
    const rounds = xs.length > 1 ? `, ${xs.filter((x) => x <= goal).length} of ${xs.length} rounds` : "";
    return [
      { met, line: `goal cpu/request worker÷bare-worker ${name} ≤ ${goal}: ${value.toFixed(2)} ${met ? "met" : "NOT met"}${rounds}` },
    ];
  });
  console.log(`\n## Goals, this run: ${judged.filter((j) => j.met).length} of ${judged.length} met on the median`);
  for (const j of judged) console.log(j.line);
} finally {
  for (const stop of stops.reverse()) await Promise.resolve(stop()).catch((e) => console.error("stop:", e));
}
