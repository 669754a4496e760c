// The Worker as it ships: `wrangler deploy --dry-run` (offline, minified, wrangler.toml's [alias] stand-ins applied)
// stays at most 300 KiB gzip in total, and that very bundle starts in workerd and answers: health, the OpenAPI document
// (zod and its JSON Schema conversion), the console's sign-in page (JSX) and the MCP endpoint with a tenant key (the MCP SDK with
// its stand-ins). What is in the bundle and why: docs/worker-bundle.md.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Miniflare } from "miniflare";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const run = promisify(execFile);
const COMPAT_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(await readFile("wrangler.toml", "utf8"))![1]!;
const KEY = "tg_bundle_test_key_0123456789";

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
    const r = await run("npx", ["wrangler", "deploy", "--dry-run", "--outdir", out, "--metafile", join(out, "meta.json")], {
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
      timeout: 120_000,
    });
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

  it("holds none of what the stand-ins replace, and no source file of the bundle calls createPublicClient", async () => {
    // What the bundle holds: the inputs with bytes in the output (esbuild lists tree-shaken ones with none).
    type Meta = { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> };
    const meta = JSON.parse(await readFile(join(out, "meta.json"), "utf8")) as Meta;
    const inputs = Object.values(meta.outputs).flatMap((o) =>
      Object.entries(o.inputs)
        .filter(([, v]) => v.bytesInOutput > 0)
        .map(([f]) => f),
    );
    // @x402/core's own copy of Zod 3 is gone too: its schemas are built with zod 4 (deploy/worker-shims/zod.js).
    for (const gone of [
      "@x402/core/node_modules/zod/",
      "node_modules/ajv/",
      "node_modules/zod-to-json-schema/",
      "node_modules/zod/v3/",
      "node_modules/viem/_esm/clients/decorators/public",
      "node_modules/lru-cache/",
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
    mf = new Miniflare({
      host: "127.0.0.1",
      modules: true,
      modulesRoot: out,
      scriptPath: join(out, "worker.js"),
      compatibilityDate: COMPAT_DATE,
      bindings: { TOLLGATE_CONFIG: JSON.stringify(config), TOLLGATE_TOKEN_SECRET: "b".repeat(40) },
      durableObjects: { TOLLGATE_STATE: { className: "TollgateState", useSQLite: true } },
    });
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
});
