// The compiled build (`npm run build` → dist/, run by bin/tollgate.js) and the package layout: the gateway runs with no
// tsx loaded, pays a search against the emulator, drains on SIGTERM and logs JSON to stdout; stack traces point at the
// TypeScript; the gateway's production dependency tree holds none of the emulator's tools.
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { routeTableMarkdown } from "../../src/routing/describe.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startGatewayProcess } from "../helpers/gateway-process.js";

const run = promisify(execFile);
const EMULATOR_TOOLS = ["puppeteer-core", "@lydell/node-pty", "node-pty", "solc", "@foundry-rs/anvil", "turndown", "minisearch"];

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "tg-compiled-"));
  // Incremental: a no-op when dist/ is current (setup.sh builds it); the tests below must see this checkout's code.
  await run("npm", ["run", "build", "--silent"], { timeout: 300_000 });
}, 320_000);
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("the compiled gateway (dist/)", () => {
  let emu: EmulatorHandle;
  afterAll(async () => {
    await emu?.close();
  });

  it("starts from bin/tollgate.js with no tsx loaded, pays a search against the emulator, logs JSON to stdout and drains on SIGTERM", async () => {
    emu = await startEmulator({ modules: ["sessions", "x402"] });
    const chain = emu.chain!;
    const wallet = await chain.createFundedWallet(10_000_000n);
    const key = generateTenantKey();
    const moduleLog = join(scratch, "modules.log");
    const gw = await startGatewayProcess(
      {
        server: { host: "127.0.0.1", port: 0, logLevel: "info" },
        upstream: { baseUrl: emu.controlUrl },
        payments: {
          networks: [chain.network],
          assets: [chain.token.address],
          maxPerRequest: "0.50",
          rpc: { [chain.network]: chain.rpcUrl },
        },
        tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }], scopes: ["search"], budget: { daily: "1.00" } }],
      },
      {
        TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
        TOLLGATE_TOKEN_SECRET: "c".repeat(40),
        TOLLGATE_WALLET_KEY: wallet.privateKey,
        TOLLGATE_TEST_MODULE_LOG: moduleLog,
        TOLLGATE_LOG_FORMAT: "json",
      },
      ["--import", "./test/packaging/module-probe.mjs", "bin/tollgate.js"],
    );
    try {
      const ready = await fetch(`${gw.url}/_tollgate/ready`);
      expect(ready.status).toBe(200);
      const r = await fetch(`${gw.url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ query: "electric vehicle charging" }),
      });
      expect(r.status).toBe(200);
      expect((await r.json()).data.results.length).toBeGreaterThan(0);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
    } finally {
      gw.signal("SIGTERM");
    }
    const exit = await gw.exited;
    expect(exit).toEqual({ code: 0, signal: null });

    // TOLLGATE_LOG_FORMAT=json (as in the image): every line is a JSON object, requests and lifecycle alike; no secret.
    const lines = gw
      .output()
      .split("\n")
      .filter((l) => l.trim());
    const entries = lines.map((l) => JSON.parse(l));
    expect(
      entries.some((e) => JSON.stringify(e).includes("/x402/web/search")),
      gw.output(),
    ).toBe(true);
    expect(entries.map((e) => e.msg)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^tollgate listening on /), expect.stringMatching(/^drained: /)]),
    );
    for (const secret of [key, emu.apiKey, wallet.privateKey]) expect(gw.output()).not.toContain(secret);

    const loaded = (await readFile(moduleLog, "utf8")).split("\n").filter(Boolean);
    expect(loaded.some((m) => m.endsWith("/dist/src/cli/index.js"))).toBe(true);
    expect(loaded.some((m) => m.endsWith("/dist/src/host/node.js"))).toBe(true);
    expect(loaded.filter((m) => /[/\\]node_modules[/\\](tsx|esbuild|@esbuild)[/\\]/.test(m))).toEqual([]);
    expect(loaded.filter((m) => /\.tsx?$/.test(m))).toEqual([]);
  }, 120_000);

  it("answers `--help` and `routes` from the build, the same route table as the source", async () => {
    const help = await run(process.execPath, ["bin/tollgate.js", "--help"]);
    expect(help.stdout).toMatch(/^tollgate — /);
    const routes = await run(process.execPath, ["bin/tollgate.js", "routes"]);
    expect(routes.stdout).toBe(routeTableMarkdown());
  });

  it("points stack traces at the TypeScript through source maps", async () => {
    const r = await run(process.execPath, ["bin/tollgate.js", "start", "--config", join(scratch, "missing.toml")]).catch((e) => e);
    expect(r.code).toBe(1);
    // An error thrown inside the compiled config loader, with its stack mapped back to config/load-node.ts.
    const probe = await run(process.execPath, [
      "--enable-source-maps",
      "--input-type=module",
      "-e",
      `const { loadConfigFile } = await import(${JSON.stringify(new URL("../../dist/config/load-node.js", import.meta.url).href)});
       try { await loadConfigFile("/nonexistent/tollgate.toml"); } catch (e) { console.log(e.stack); }`,
    ]);
    expect(probe.stdout).toMatch(/config[/\\]load-node\.ts:\d+:\d+/);
    expect(probe.stdout).not.toMatch(/dist[/\\]config[/\\]load(-node)?\.js/);
  });
});

describe("the package layout", () => {
  /** Every package name in an `npm ls --json --all` tree. */
  const names = (tree: { dependencies?: Record<string, unknown> }): Set<string> => {
    const out = new Set<string>();
    const walk = (deps: Record<string, any> | undefined) => {
      for (const [name, d] of Object.entries(deps ?? {})) {
        out.add(name);
        walk(d.dependencies);
      }
    };
    walk(tree.dependencies);
    return out;
  };
  const npmLs = async (...args: string[]) => {
    const r = await run("npm", ["ls", "--json", "--all", "--omit=dev", ...args], { maxBuffer: 64 << 20 }).catch((e) => e);
    return JSON.parse(r.stdout);
  };

  it("the gateway's production dependency tree holds no browser, PTY, chain, Solidity, markdown or search tooling", async () => {
    // The gateway is the root package; --workspaces=false leaves the emulator workspace out, as `npm ci --omit=dev
    // --workspaces=false` (the image's runtime stage) does.
    const gateway = names(await npmLs("--workspaces=false"));
    expect(gateway.has("hono")).toBe(true);
    expect(gateway.has("viem")).toBe(true);
    expect(EMULATOR_TOOLS.filter((n) => gateway.has(n))).toEqual([]);
    expect(gateway.has("tsx")).toBe(false);
    expect(gateway.has("@tollgate/emulator")).toBe(false);
    // The same query sees them in the emulator's tree (so the check above can fail).
    const emulator = names(await npmLs("--workspace", "@tollgate/emulator"));
    expect(["puppeteer-core", "@lydell/node-pty", "@foundry-rs/anvil", "turndown", "minisearch"].filter((n) => !emulator.has(n))).toEqual(
      [],
    );
  });

  it("the emulator imports nothing from the gateway, and the gateway reaches the emulator only as @tollgate/emulator", async () => {
    const files = async (dir: string): Promise<string[]> =>
      (await readdir(dir, { recursive: true, withFileTypes: true }))
        .filter(
          (e) => e.isFile() && /\.(ts|tsx|mjs)$/.test(e.name) && !e.parentPath.includes("dist") && !e.parentPath.includes("node_modules"),
        )
        .map((e) => join(e.parentPath, e.name));
    const importsOf = async (file: string) =>
      [...(await readFile(file, "utf8")).matchAll(/(?:from\s+|import\s*\(\s*)"([^"]+)"/g)].map((m) => m[1]);
    const escaping: string[] = [];
    for (const f of await files("emulator")) {
      const depth = f.split("/").length - 2; // folders below emulator/
      for (const spec of await importsOf(f)) if (spec.startsWith("../".repeat(depth + 1))) escaping.push(`${f}: ${spec}`);
    }
    expect(escaping).toEqual([]);
    const reaching: string[] = [];
    for (const dir of ["src", "config", "middleware"])
      for (const f of await files(dir)) {
        if (f.endsWith(".test.ts")) continue;
        for (const spec of await importsOf(f)) if (/(^|\/)emulator\//.test(spec) && spec.startsWith(".")) reaching.push(`${f}: ${spec}`);
      }
    expect(reaching).toEqual([]);
  });
});
