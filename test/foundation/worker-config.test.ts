// Workers without hand work (issue 54): `tollgate config render --worker FILE` prints the Worker's configuration (the
// TOLLGATE_CONFIG var, as the Worker parses it, and the secrets to bind); `config check --worker` names what only the
// Node entry can run (Redis, secret files, OTLP) by its field.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parse } from "smol-toml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig, parseConfigText } from "../../config/load.js";

const run = promisify(execFile);
const CLI = ["--import", "tsx", "src/cli/index.ts"];
const HASH = (c: string) => `sha256:${c.repeat(64)}`;
const FILE = `[server]
publicOrigin = "https://gateway.example.com"
[upstream]
baseUrl = "https://api.hyperbrowser.ai"
[payments]
maxPerRequest = "0.05"
[state]
backend = "durable-objects"
[[tenants]]
id = "team-a"
scopes = ["search", "sessions"]
keys = [{ hash = "${HASH("a")}" }]
budget = { daily = "5.00" }
[[tenants]]
id = "ops"
scopes = ["admin"]
keys = [{ hash = "${HASH("b")}" }]
`;

describe("the Worker's configuration from the config file", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tg-worker-config-"));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it("renders TOLLGATE_CONFIG as the Worker parses it, and the secrets to bind", async () => {
    const file = join(dir, "tollgate.toml");
    await writeFile(file, FILE);
    const { stdout } = await run(process.execPath, [...CLI, "config", "render", "--worker", file]);
    const vars = (parse(stdout) as { vars: { TOLLGATE_CONFIG: string } }).vars;
    // The same configuration the file gives `start`.
    expect(parseConfig(JSON.parse(vars.TOLLGATE_CONFIG), "TOLLGATE_CONFIG")).toEqual(parseConfigText(FILE));
    for (const s of ["TOLLGATE_UPSTREAM_API_KEY", "TOLLGATE_TOKEN_SECRET", "TOLLGATE_WALLET_KEY"])
      expect(stdout).toContain(`npx wrangler secret put ${s}`);
    const check = await run(process.execPath, [...CLI, "config", "check", "--worker", file]);
    expect(check.stdout).toContain("OK (2 tenants)");
  }, 60_000);

  it("names what only the Node entry runs, by its field", async () => {
    const file = join(dir, "node-only.toml");
    await writeFile(
      file,
      FILE.replace('backend = "durable-objects"', 'backend = "redis"\nredisUrl = "redis://127.0.0.1:6379"').replace(
        "[payments]",
        '[secrets]\nupstreamApiKeyFile = "/run/secrets/upstream"\n[tracing]\notlpEndpoint = "http://127.0.0.1:4318/v1/traces"\n[payments]',
      ),
    );
    for (const cli of [
      ["config", "check", "--worker", file],
      ["config", "render", "--worker", file],
    ]) {
      const err = await run(process.execPath, [...CLI, ...cli]).catch((e) => e);
      expect(err.code).toBe(1);
      expect(err.stderr).toContain('state.backend: "redis" is for the Node entry');
      expect(err.stderr).toContain("secrets.upstreamApiKeyFile: files cannot be read on Workers");
      expect(err.stderr).toContain("tracing.otlpEndpoint: OTLP export runs on the Node entry only");
    }
  }, 60_000);
});
