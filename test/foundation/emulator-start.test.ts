// `tollgate emulator --json` hands an operator everything `tollgate start` needs to pay: URLs, API key, a funded
// wallet and the token's address. Both commands run as child processes, as an operator would start them.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

function cli(args: string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ["--import", "tsx", "src/cli/index.ts", ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
    env: { ...process.env, ...env },
  });
}

/** Resolves with the first stream text matching `pattern`, or rejects after `ms` / when the process exits. */
function waitFor(
  child: ChildProcessWithoutNullStreams,
  stream: "stdout" | "stderr",
  pattern: RegExp,
  ms: number,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let text = "";
    let other = "";
    const t = setTimeout(() => reject(new Error(`no ${pattern} in ${ms} ms:\n${text}\n${other}`)), ms);
    child[stream].on("data", (d) => {
      text += d;
      const m = text.match(pattern);
      if (m) clearTimeout(t), resolve(m);
    });
    child[stream === "stdout" ? "stderr" : "stdout"].on("data", (d) => (other += d));
    child.once("exit", (c) => (clearTimeout(t), reject(new Error(`exited ${c}:\n${text}\n${other}`))));
  });
}

const stop = async (child: ChildProcessWithoutNullStreams | undefined) => {
  if (!child?.pid || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  process.kill(child.pid, "SIGINT");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    /* gone */
  }
};

describe("`tollgate start` against `tollgate emulator`", () => {
  it("pays a search with the wallet and token the emulator printed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tollgate-start-"));
    let emu: ChildProcessWithoutNullStreams | undefined;
    let gw: ChildProcessWithoutNullStreams | undefined;
    try {
      emu = cli(["emulator", "--json"]);
      const line = (await waitFor(emu, "stdout", /^\{.*\}\n/m, 60_000))[0];
      const info = JSON.parse(line);
      expect(Object.keys(info).sort()).toEqual(["allowedHost", "apiKey", "chain", "runtime", "token", "upstream", "wallet"]);
      // The host the emulator's sandboxes hand out (localhost, for exposed ports): what upstream.allowedHosts must name.
      expect(info.allowedHost).toBe(`localhost:${new URL(info.runtime).port}`);
      expect(info.wallet.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
      expect(info.wallet.privateKey).toMatch(/^0x[0-9a-f]{64}$/);
      expect(info.token).toMatchObject({
        address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
        network: expect.stringMatching(/^eip155:\d+$/),
        decimals: 6,
      });

      // The config an operator writes from that line (README: emulator/README.md).
      const key = generateTenantKey();
      const config = join(dir, "tollgate.toml");
      writeFileSync(
        config,
        [
          "[server]",
          'host = "127.0.0.1"',
          "port = 0",
          "[upstream]",
          `baseUrl = "${info.upstream}"`,
          `allowedHosts = ["${info.allowedHost}"]`,
          "[payments]",
          `networks = ["${info.token.network}"]`,
          `assets = ["${info.token.address}"]`,
          'maxPerRequest = "0.05"',
          `rpc = { "${info.token.network}" = "${info.chain}" }`,
          "[state]",
          'backend = "memory"',
          "rehearsal = true",
          "[[tenants]]",
          'id = "acme"',
          'scopes = ["search"]',
          `keys = [{ hash = "${await hashTenantKey(key)}" }]`,
          "",
        ].join("\n"),
      );
      gw = cli(["start", "--config", config], {
        TOLLGATE_UPSTREAM_API_KEY: info.apiKey,
        TOLLGATE_WALLET_KEY: info.wallet.privateKey,
        TOLLGATE_TOKEN_SECRET: "s".repeat(40),
      });
      const url = (await waitFor(gw, "stderr", /listening on (http:\/\/\S+),/, 60_000))[1]!;
      const r = await fetch(`${url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ query: "electric vehicle charging" }),
      });
      const body = await r.json();
      expect(r.status, JSON.stringify(body)).toBe(200);
      expect(body.data.results.length).toBeGreaterThan(0);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
    } finally {
      await stop(gw);
      await stop(emu);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});
