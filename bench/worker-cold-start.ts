// The Worker bundle: its size (wrangler's own `Total Upload … gzip` line, offline dry run), what is in it (esbuild
// metafile, by package), and its cold start in workerd through Miniflare: instantiation until ready, then the first
// `/_tollgate/health` answer (the script's top-level evaluation plus the first gateway build), against a trivial Worker;
// and the same bundle's top-level evaluation and first health answer in a fresh Node process (V8 alone, no workerd or
// Durable Object set-up: `cloudflare:workers` stubbed), which isolates what the script itself costs.
//
// `npm run bench -- worker-cold-start`; BENCH_COLD_RUNS (5); BENCH_WORKER_DIR reuses a bundle built beforehand;
// BENCH_WORKER_COMPARE_DIR adds another prebuilt bundle (e.g. an older revision's), measured in the same rounds.
import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Miniflare } from "miniflare";

const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5);
const COMPAT_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync("wrangler.toml", "utf8"))![1]!;

function build(): { dir: string; line: string } {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-worker-"));
  const out = execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", dir, "--metafile", join(dir, "meta.json")], {
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { dir, line: /Total Upload:.*$/m.exec(out)?.[0] ?? "(no size line)" };
}

/** Bytes in the bundle per package (or per source directory), from the esbuild metafile. */
function composition(metaPath: string): Array<[string, number]> {
  const meta = JSON.parse(readFileSync(metaPath, "utf8"));
  const out = Object.values(meta.outputs as Record<string, { inputs: Record<string, { bytesInOutput: number }> }>).find(
    (o) => Object.keys(o.inputs).length > 1,
  )!;
  const by = new Map<string, number>();
  for (const [file, v] of Object.entries(out.inputs)) {
    let key: string;
    const nm = file.lastIndexOf("node_modules/");
    if (nm >= 0) {
      const parts = file.slice(nm + 13).split("/");
      const pkg = parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
      const nested = file.slice(0, nm).includes("node_modules/")
        ? ` (under ${file.slice(file.indexOf("node_modules/") + 13, nm - 1)})`
        : "";
      key = pkg + nested;
    } else key = file.split("/").slice(0, 2).join("/");
    by.set(key, (by.get(key) ?? 0) + v.bytesInOutput);
  }
  return [...by.entries()].sort((a, b) => b[1] - a[1]);
}

const TRIVIAL = `export default { fetch() { return new Response('{"status":"ok"}', { headers: { "content-type": "application/json" } }); } };\n`;

async function coldStart(scriptPath: string, withState: boolean): Promise<{ readyMs: number; firstMs: number }> {
  const t0 = performance.now();
  const mf = new Miniflare({
    host: "127.0.0.1",
    modules: true,
    modulesRoot: dirname(scriptPath),
    scriptPath,
    compatibilityDate: COMPAT_DATE,
    bindings: { TOLLGATE_CONFIG: JSON.stringify({ server: { logLevel: "silent" } }) },
    ...(withState ? { durableObjects: { TOLLGATE_STATE: { className: "TollgateState", useSQLite: true } } } : {}),
  });
  try {
    await mf.ready;
    const t1 = performance.now();
    const res = await mf.dispatchFetch("http://localhost/_tollgate/health");
    await res.text();
    if (res.status !== 200) throw new Error(`health answered ${res.status}`);
    return { readyMs: t1 - t0, firstMs: performance.now() - t1 };
  } finally {
    await mf.dispose();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The bundle evaluated by Node in a fresh process: [top-level evaluation ms, first /_tollgate/health ms]. */
function nodeEval(scriptPath: string): [number, number] {
  const copy = scriptPath.replace(/\.js$/, ".node-eval.mjs");
  const src = readFileSync(scriptPath, "utf8").replace(
    /import\s*\{\s*DurableObject as (\w+)\s*\}\s*from\s*"cloudflare:workers";?/,
    "const $1=class{};",
  );
  writeFileSync(copy, src);
  const probe = `const t=performance.now();import(${JSON.stringify(pathToFileURL(copy).href)}).then(async(m)=>{const t1=performance.now();
const r=await m.default.fetch(new Request("http://localhost/_tollgate/health"),{TOLLGATE_CONFIG:'{"server":{"logLevel":"silent"}}'},{waitUntil(){},passThroughOnException(){}});
await r.text();if(r.status!==200)throw new Error("health answered "+r.status);console.log(JSON.stringify([t1-t,performance.now()-t1]))})`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", probe], { encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").pop()!);
}

const given = process.env.BENCH_WORKER_DIR;
const built = given ? { dir: given, line: "(prebuilt)" } : build();
try {
  const script = join(built.dir, "worker.js");
  console.log(`\n## Worker bundle (wrangler dry run, ${new Date().toISOString().slice(0, 10)})\n\n${built.line}\n`);
  const meta = join(built.dir, "meta.json");
  if (existsSync(meta)) {
    console.log("| package / source | KiB in bundle (minified) |\n|---|---|");
    for (const [k, v] of composition(meta).slice(0, 15)) console.log(`| ${k} | ${(v / 1024).toFixed(1)} |`);
  }
  const trivialPath = join(built.dir, "trivial.js");
  writeFileSync(trivialPath, TRIVIAL);
  const compare = process.env.BENCH_WORKER_COMPARE_DIR;
  const rows: Array<[string, string, boolean, Array<{ readyMs: number; firstMs: number }>]> = [
    ["trivial Worker (workerd baseline)", trivialPath, false, []],
    ["Tollgate Worker", script, true, []],
    ...(compare ? [[`Tollgate Worker from ${compare}`, join(compare, "worker.js"), true, []] as [string, string, boolean, never[]]] : []),
  ];
  // The order rotates each round: whichever instance comes right after another one tends to start slower.
  for (let i = 0; i < RUNS; i++) {
    for (let j = 0; j < rows.length; j++) {
      const [, path, withState, xs] = rows[(i + j) % rows.length]!;
      xs.push(await coldStart(path, withState));
    }
  }
  console.log(`\n## Worker cold start in workerd via Miniflare (median of ${RUNS})\n`);
  console.log("| worker | instantiate → ready ms | first /_tollgate/health ms | total ms |\n|---|---|---|---|");
  for (const [name, , , xs] of rows) {
    const r = median(xs.map((x) => x.readyMs));
    const f = median(xs.map((x) => x.firstMs));
    console.log(`| ${name} | ${r.toFixed(0)} | ${f.toFixed(1)} | ${median(xs.map((x) => x.readyMs + x.firstMs)).toFixed(0)} |`);
  }
  console.log(`\n## The same bundle in a fresh Node process (median of ${RUNS})\n`);
  console.log("| worker | top-level evaluation ms | first /_tollgate/health ms |\n|---|---|---|");
  for (const [name, path] of rows.slice(1)) {
    const xs = Array.from({ length: RUNS }, () => nodeEval(path));
    console.log(`| ${name} | ${median(xs.map((x) => x[0])).toFixed(0)} | ${median(xs.map((x) => x[1])).toFixed(1)} |`);
  }
} finally {
  if (!given) rmSync(built.dir, { recursive: true, force: true });
}
