// The Worker as it ships: `wrangler deploy --dry-run` (offline, minified, wrangler.toml's [alias] stand-ins applied)
// builds without a warning, stays at most 1 MiB gzip in total (a third of the free plan's 3 MiB), holds the real
// lru-cache and zod, starts within a bound well inside Cloudflare's 1 s startup limit (the startup CPU profile
// `wrangler check startup` takes in workerd), and that very bundle starts in a fresh workerd and answers: health (its
// time to first response printed beside a trivial Worker's), the OpenAPI document (zod and its JSON Schema conversion),
// the console's sign-in page (JSX) and the MCP endpoint with a tenant key (the MCP SDK with its stand-ins). What is in
// the bundle and why: docs/worker-bundle.md.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Miniflare } from "miniflare";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const run = promisify(execFile);
const COMPAT_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(await readFile("wrangler.toml", "utf8"))![1]!;
const KEY = "tg_bundle_test_key_0123456789";
const WRANGLER_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" };
/** Cloudflare's limit on a Worker's startup (parsing and running its global scope), and the bound held here. */
const CLOUDFLARE_STARTUP_LIMIT_MS = 1000;
const STARTUP_BOUND_MS = 500;

/**
 * The CPU a startup profile shows (a V8 .cpuprofile from `wrangler check startup`): the samples not idle, times the
 * sampler's interval (the profile's 25th-percentile gap between samples, ~1.1 ms). The sampler ticks on wall time but
 * samples a thread only while it runs, so on a shared machine the count reads close to the CPU used, where the
 * profile's span (wall time) and its late samples' gaps do not.
 */
function startupCpuMs(profile: {
  nodes: { id: number; callFrame: { functionName: string } }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}) {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
  const deltas = profile.timeDeltas.slice(1).sort((a, b) => a - b);
  const intervalUs = deltas[Math.floor(deltas.length / 4)] ?? 1000;
  const busy = profile.samples.filter((s) => !idle.has(s)).length;
  return { cpuMs: (busy * intervalUs) / 1000, spanMs: (profile.endTime - profile.startTime) / 1000, samples: busy };
}

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("Workers bundle", () => {
  let out: string;
  let text: string;
  let mf: Miniflare | undefined;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), "tg-worker-"));
    // --outfile as well: the upload as wrangler would send it, which `wrangler check startup` profiles.
    const r = await run(
      "npx",
      ["wrangler", "deploy", "--dry-run", "--outdir", out, "--metafile", join(out, "meta.json"), "--outfile", join(out, "worker.bundle")],
      { env: WRANGLER_ENV, timeout: 120_000 },
    );
    text = r.stdout + r.stderr;
  }, 180_000);

  afterAll(async () => {
    await mf?.dispose();
    await rm(out, { recursive: true, force: true });
  });

  it("builds offline with `wrangler deploy --dry-run`, minified, at most 1 MiB gzip in total", async () => {
    const m = text.match(/Total Upload:\s*([\d.]+) KiB \/ gzip:\s*([\d.]+) KiB/);
    expect(m, text).not.toBeNull();
    console.log(`[worker bundle] total ${m![1]} KiB, gzip ${m![2]} KiB`);
    // Issue 16 set 300 KiB; issue 44 brought it back under it (430 KiB before): ajv, Zod 3, viem's public actions and
    // lru-cache replaced by stand-ins in the bundle, no esbuild keepNames. That bound was the project's own: Workers
    // allow 3 MiB gzip on the free plan (10 MiB paid), so the bound is now a third of the free plan's (issue 55), with
    // room for the maintained libraries the stand-ins replace.
    expect(Number(m![2])).toBeLessThanOrEqual(1024);
    expect((await readdir(out)).some((f) => f.endsWith(".js"))).toBe(true);
  });

  it("builds without a warning", () => {
    // esbuild's and wrangler's warnings both print as "▲ [WARNING] …" (an import of node:fs/promises was one).
    expect(text).not.toMatch(/\[WARNING\]|▲/);
  });

  it("starts well inside Cloudflare's startup limit (the startup CPU profile wrangler takes in workerd)", async () => {
    // Two profiles, the smaller kept: a busy shared machine only adds.
    const runs = [];
    for (let i = 0; i < 2; i++) {
      const file = join(out, `startup-${i}.cpuprofile`);
      await run("npx", ["wrangler", "check", "startup", "--worker", join(out, "worker.bundle"), "--outfile", file], {
        env: WRANGLER_ENV,
        timeout: 120_000,
      });
      runs.push(startupCpuMs(JSON.parse(await readFile(file, "utf8"))));
    }
    const best = runs.reduce((a, b) => (b.cpuMs < a.cpuMs ? b : a));
    console.log(
      `[worker startup] CPU ${runs.map((r) => r.cpuMs.toFixed(0)).join(", ")} ms (profile spans ${runs.map((r) => r.spanMs.toFixed(0)).join(", ")} ms); bound ${STARTUP_BOUND_MS} ms, Cloudflare's limit ${CLOUDFLARE_STARTUP_LIMIT_MS} ms`,
    );
    expect(best.samples).toBeGreaterThan(10);
    expect(best.cpuMs).toBeLessThanOrEqual(STARTUP_BOUND_MS);
  }, 300_000);

  it("holds the real lru-cache and zod, none of what the stand-ins replace, and no source calling createPublicClient", async () => {
    // What the bundle holds: the inputs with bytes in the output (esbuild lists tree-shaken ones with none).
    type Meta = { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> };
    const meta = JSON.parse(await readFile(join(out, "meta.json"), "utf8")) as Meta;
    const inputs = Object.values(meta.outputs).flatMap((o) =>
      Object.entries(o.inputs)
        .filter(([, v]) => v.bytesInOutput > 0)
        .map(([f]) => f),
    );
    // The maintained libraries the Worker runs are there as they are: lru-cache, zod 4, and the Zod 3 @x402/core
    // carries for its payment schemas (issue 55: no re-implementation of them).
    for (const kept of ["node_modules/lru-cache/", "node_modules/zod/v4/", "node_modules/@x402/core/node_modules/zod/"]) {
      expect(inputs.filter((f) => f.startsWith(kept)).length, kept).toBeGreaterThan(0);
    }
    for (const gone of [
      "node_modules/ajv/",
      "node_modules/zod-to-json-schema/",
      "node_modules/zod/v3/",
      "node_modules/viem/_esm/clients/decorators/public",
    ]) {
      expect(inputs.filter((f) => f.startsWith(gone))).toEqual([]);
    }
    // The viem stand-in throws from createPublicClient: the gateway's own code reads the chain with createClient.
    const own = inputs.filter((f) => /^(src|middleware|config)\//.test(f));
    expect(own.length).toBeGreaterThan(100);
    for (const f of own) expect((await readFile(f, "utf8")).includes("createPublicClient"), f).toBe(false);
  });

  it("starts in workerd and answers health, the OpenAPI document, the console and MCP", async () => {
    const config = {
      server: { logLevel: "silent" },
      tenants: [{ id: "bundle", keys: [{ hash: await sha256(KEY) }], scopes: ["search", "sessions", "sandboxes"] }],
    };
    // A fresh workerd isolate's time to its first answer, beside a trivial Worker's started the same way (printed: on a
    // shared machine the wall time says little; the startup profile above is what is held to a bound).
    const trivial = join(out, "trivial.js");
    await writeFile(trivial, `export default { fetch() { return new Response("ok"); } };\n`);
    const timeToFirst = async (m: Miniflare, path: string) => {
      const t = performance.now();
      await m.ready;
      const ready = performance.now() - t;
      const r = await m.dispatchFetch(`http://gateway.test${path}`);
      await r.text();
      return { ready, first: performance.now() - t - ready, status: r.status };
    };
    let t0 = performance.now();
    const base = new Miniflare({ host: "127.0.0.1", modules: true, modulesRoot: out, scriptPath: trivial, compatibilityDate: COMPAT_DATE });
    const baseline = await timeToFirst(base, "/").finally(() => base.dispose());
    const baselineMs = performance.now() - t0;
    t0 = performance.now();
    mf = new Miniflare({
      host: "127.0.0.1",
      modules: true,
      modulesRoot: out,
      scriptPath: join(out, "worker.js"),
      compatibilityDate: COMPAT_DATE,
      bindings: { TOLLGATE_CONFIG: JSON.stringify(config), TOLLGATE_TOKEN_SECRET: "b".repeat(40) },
      durableObjects: { TOLLGATE_STATE: { className: "TollgateState", useSQLite: true } },
    });
    const own = await timeToFirst(mf, "/_tollgate/health");
    const ownMs = performance.now() - t0;
    console.log(
      `[worker cold start] fresh workerd to first answer: Tollgate ${ownMs.toFixed(0)} ms (ready ${own.ready.toFixed(0)}, first /_tollgate/health ${own.first.toFixed(0)}), trivial Worker ${baselineMs.toFixed(0)} ms (ready ${baseline.ready.toFixed(0)}, first ${baseline.first.toFixed(0)})`,
    );
    expect(baseline.status).toBe(200);
    expect(own.status).toBe(200);
    const origin = "http://gateway.test";
    const health = await mf.dispatchFetch(`${origin}/_tollgate/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok" });

    const doc = await mf.dispatchFetch(`${origin}/_tollgate/openapi.json`);
    expect(doc.status).toBe(200);
    const openapi = (await doc.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(openapi.openapi).toMatch(/^3\.1/);
    expect(Object.keys(openapi.paths).length).toBeGreaterThan(20);

    const page = await mf.dispatchFetch(`${origin}/_tollgate/console/sign-in`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<form");

    const refused = await mf.dispatchFetch(`${origin}/mcp`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: expect.any(String), message: expect.any(String) });

    const client = new Client({ name: "bundle-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      fetch: async (url, init) => (await mf!.dispatchFetch(String(url), init as never)) as unknown as Response,
    });
    await client.connect(transport);
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["budget", "web_search", "sandbox_exec"]));
    // Tool input schemas are Zod 4, turned into JSON Schema by Zod itself (the Zod 3 path is a stand-in here).
    expect(tools.find((t) => t.name === "web_search")!.inputSchema).toMatchObject({ type: "object" });
    await client.close();
  }, 60_000);

  it("answers a burst of separate requests at a rate-limit window's start, none cancelled as hung", async () => {
    // Separate requests into workerd (dispatchFetch), each in its own request context, for a tenant this isolate has
    // not counted yet: the first hit goes blind and the rest must learn the fleet's count, each on its own state call
    // (GatewayDeps.sharedWaits: false in the Worker entry), since workerd may cancel a request waiting on another
    // request's I/O. Unloaded, waiting on the first request's batch passed here too; under the Worker bench's load it
    // answered 500s at window turns (docs/rate-limits.md). What this holds: the own-call path answers every request.
    const burstKey = "tg_bundle_burst_key_0123456789";
    const burst = new Miniflare({
      host: "127.0.0.1",
      modules: true,
      modulesRoot: out,
      scriptPath: join(out, "worker.js"),
      compatibilityDate: COMPAT_DATE,
      bindings: {
        TOLLGATE_CONFIG: JSON.stringify({
          server: { logLevel: "silent" },
          tenants: [{ id: "burst", keys: [{ hash: await sha256(burstKey) }], quotas: { requestsPerMinute: 100_000 } }],
        }),
        TOLLGATE_TOKEN_SECRET: "c".repeat(40),
      },
      durableObjects: { TOLLGATE_STATE: { className: "TollgateState", useSQLite: true } },
    });
    try {
      expect((await burst.dispatchFetch("http://gateway.test/_tollgate/health")).status).toBe(200);
      const statuses = await Promise.all(
        Array.from({ length: 32 }, async () => {
          const r = await burst.dispatchFetch("http://gateway.test/_tollgate/whoami", { headers: { "x-api-key": burstKey } });
          await r.arrayBuffer();
          return r.status;
        }),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    } finally {
      await burst.dispose();
    }
  }, 60_000);
});
