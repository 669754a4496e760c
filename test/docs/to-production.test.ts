// The README's "To production", followed as written against the emulator: the documented minimal config (the file the
// README quotes), a key per tenant from `tollgate keys create` pasted over its `keys` line, the rehearsal's edits
// (upstream, allowed hosts and payments pointed at what the emulator prints), the three secrets in the environment and
// nothing else, then `tollgate start --config FILE`: ready, a search paid on chain, a credit-billed search, the
// operator's metrics and the tenant's usage answer; SIGTERM drains and exits 0; no secret in the output.
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";

const run = promisify(execFile);
const CLI = ["--import", "tsx", "src/cli/index.ts"];
const EXAMPLE = "config/examples/production-minimal.toml";

/** The README's ```toml blocks. */
async function readmeTomlBlocks(): Promise<string[]> {
  const readme = await readFile("README.md", "utf8");
  return [...readme.matchAll(/^```toml\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/**
 * Sets `key = …` inside `[table]` (or the n-th `[[table]]` block) to `value`, as a reader edits the file: the line's
 * value is replaced, its comment kept. Fails when the line is not there exactly once, so a renamed option breaks this
 * test rather than silently testing something else.
 */
function edit(toml: string, table: string, key: string, value: string, nth = 0): string {
  const lines = toml.split("\n");
  let current = "";
  let seen = -1;
  const hits: number[] = [];
  lines.forEach((line, i) => {
    const header = /^\[\[?([^\]]+)\]\]?/.exec(line);
    if (header) {
      current = header[1]!;
      if (current === table) seen++;
      return;
    }
    if (current === table && seen === nth && new RegExp(`^${key}\\s*=`).test(line)) hits.push(i);
  });
  expect(hits, `${EXAMPLE}: [${table}] ${key} (block ${nth}) should be set once`).toHaveLength(1);
  const i = hits[0]!;
  const comment = /\s#\s.*$/.exec(lines[i]!.replace(/"(?:[^"\\]|\\.)*"/g, (m) => " ".repeat(m.length)));
  lines[i] = `${key} = ${value}${comment ? lines[i]!.slice(comment.index) : ""}`;
  return lines.join("\n");
}

/** `tollgate keys create --tenant ID`: the key it prints once, and the `keys = […]` line to paste. */
async function createKey(tenant: string): Promise<{ key: string; line: string }> {
  const { stdout } = await run(process.execPath, [...CLI, "keys", "create", "--tenant", tenant]);
  const key = /^\s+(tg_\S+)$/m.exec(stdout)?.[1];
  const line = /^\s+(keys = \[.*\])$/m.exec(stdout)?.[1];
  expect(key, stdout).toBeDefined();
  expect(line, stdout).toBeDefined();
  return { key: key!, line: line! };
}

describe("README: To production", () => {
  let emu: EmulatorHandle;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tg-to-production-"));
    emu = await startEmulator({ modules: ["x402"] });
  }, 120_000);
  afterAll(async () => {
    await emu?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("quotes the minimal config file as it is", async () => {
    expect(await readmeTomlBlocks()).toContain(await readFile(EXAMPLE, "utf8"));
  });

  it("the minimal config, two keys, the three secrets and `tollgate start` front the (emulated) upstream", async () => {
    const chain = emu.chain!;
    const wallet = await chain.createFundedWallet(10_000_000n);
    const teamA = await createKey("team-a");
    const ops = await createKey("ops");

    // Step 1 and 2: the file, each tenant's keys line replaced by the one `keys create` printed.
    let toml = await readFile(EXAMPLE, "utf8");
    toml = edit(toml, "tenants", "keys", teamA.line.slice("keys = ".length), 0);
    toml = edit(toml, "tenants", "keys", ops.line.slice("keys = ".length), 1);
    // The rehearsal: upstream, allowed hosts and payments pointed at what the emulator prints.
    toml = edit(toml, "upstream", "baseUrl", JSON.stringify(emu.controlUrl));
    toml = edit(toml, "upstream", "allowedHosts", JSON.stringify([new URL(emu.runtimeUrl).host]));
    toml = edit(toml, "payments", "networks", JSON.stringify([chain.network]));
    toml = edit(toml, "payments", "assets", JSON.stringify([chain.token.address]));
    toml = edit(toml, "payments", "rpc", `{ ${JSON.stringify(chain.network)} = ${JSON.stringify(chain.rpcUrl)} }`);
    const file = join(dir, "tollgate.toml");
    await writeFile(file, toml);
    const check = await run(process.execPath, [...CLI, "config", "check", file]);
    expect(check.stdout).toContain("OK (2 tenants)");

    // Step 3 and 4: the three secrets and nothing else of Tollgate's in the environment; `start --config FILE` (on a
    // free port: 8787 may be taken on a shared machine).
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" };
    env.TOLLGATE_UPSTREAM_API_KEY = emu.apiKey;
    env.TOLLGATE_WALLET_KEY = wallet.privateKey;
    env.TOLLGATE_TOKEN_SECRET = "p".repeat(64);
    const child = spawn(process.execPath, [...CLI, "start", "--config", file, "--port", "0"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.once("exit", (code, signal) => r({ code, signal })),
    );
    try {
      const gw = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`tollgate start did not listen:\n${out}`)), 60_000);
        const look = () => {
          const m = /listening on (http:\/\/[\d.:]+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        };
        child.stdout!.on("data", look);
        child.stderr!.on("data", look);
        void exited.then(({ code }) => {
          clearTimeout(timer);
          reject(new Error(`tollgate start exited with ${code}:\n${out}`));
        });
      });
      expect(out).toContain(`fronting ${emu.controlUrl}`);

      const ready = await fetch(`${gw}/_tollgate/ready`);
      expect(ready.status, out).toBe(200);
      expect((await ready.json()).status).toBe("ready");

      const search = (path: string) =>
        fetch(`${gw}${path}`, {
          method: "POST",
          headers: { "x-api-key": teamA.key, "content-type": "application/json" },
          body: JSON.stringify({ query: "electric vehicle charging" }),
        });
      const paid = await search("/x402/web/search");
      expect(paid.status, out).toBe(200);
      expect(paid.headers.get("x-tollgate-paid")).toBe("0.005");
      expect((await paid.json()).data.results.length).toBeGreaterThan(0);
      const credits = await search("/api/web/search");
      expect(credits.status, out).toBe(200);

      const usage = await (await fetch(`${gw}/_tollgate/usage`, { headers: { "x-api-key": teamA.key } })).json();
      expect(JSON.stringify(usage)).toContain("5.00");
      const metrics = await fetch(`${gw}/_tollgate/metrics`, { headers: { "x-api-key": ops.key } });
      expect(metrics.status).toBe(200);
      const text = await metrics.text();
      expect(text).toMatch(/^tollgate_state_up 1$/m);
      expect(text).toMatch(/^tollgate_budget_remaining_usd\{tenant="team-a",window="daily"\} 4\.99/m);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    }
    const exit = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 30_000))]);
    if (exit === "timeout") process.kill(-child.pid!, "SIGKILL");
    expect(exit).toEqual({ code: 0, signal: null });
    for (const secret of [teamA.key, ops.key, emu.apiKey, wallet.privateKey, env.TOLLGATE_TOKEN_SECRET]) expect(out).not.toContain(secret);
  }, 180_000);
});
