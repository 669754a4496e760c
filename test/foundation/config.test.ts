import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ConfigError, parseConfigText, secretsFromEnv } from "../../config/load.js";

const run = promisify(execFile);
const HASH = "sha256:" + "ab".repeat(32);

function problemsOf(text: string, name = "t.toml"): string[] {
  try {
    parseConfigText(text, name);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration", () => {
  it("lists every problem at once, each with its exact path and what was expected", () => {
    const problems = problemsOf(`
[server]
port = "eighty"
[[tenants]]
id = "a"
keys = [{ hash = "${HASH}" }]
[[tenants]]
id = "b"
keys = [{ hash = "md5:nope" }]
budget = { daily = 5 }
scopes = ["search", "root"]
`);
    expect(problems).toContain("server.port: expected a port number");
    expect(problems).toContain('tenants[1].budget.daily: expected a USD amount like "5.00"');
    expect(problems.some((p) => p.startsWith('tenants[1].keys[0].hash: expected "sha256:'))).toBe(true);
    expect(problems.some((p) => p.startsWith("tenants[1].scopes[1]:"))).toBe(true);
    expect(problems).toHaveLength(4);
  });

  it("names the exact field of a wrong proxy, host, CORS or drain option", () => {
    const problems = problemsOf(`
[server]
trustedProxies = ["10.0.0.0/8", "10.0.0.0/33", "proxy.local"]
publicHosts = ["gateway.example.com", "https://gateway.example.com"]
drainSeconds = -1
[server.cors]
origins = ["https://app.example.com", "app.example.com"]
`);
    expect(problems).toContain('server.trustedProxies[1]: expected an address or CIDR range like "10.0.0.0/8" or "::1"');
    expect(problems).toContain('server.trustedProxies[2]: expected an address or CIDR range like "10.0.0.0/8" or "::1"');
    expect(problems.some((p) => p.startsWith("server.publicHosts[1]: expected a host like"))).toBe(true);
    expect(problems.some((p) => p.startsWith("server.drainSeconds:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("server.cors.origins[1]: expected an origin like"))).toBe(true);
    expect(problems).toHaveLength(5);
  });

  it("names the exact entry of a live view frame ancestor that is no origin", () => {
    const problems = problemsOf(
      `[liveView]\nframeAncestors = ["https://app.example.com", "'self'", "https://app.example.com/embed", "*"]\n`,
    );
    expect(problems.map((p) => p.split(":")[0])).toEqual(["liveView.frameAncestors[2]", "liveView.frameAncestors[3]"]);
  });

  it("names unknown options by path instead of ignoring them", () => {
    expect(problemsOf(`[cache]\nttl = 5\n`)).toEqual([
      "cache.ttl: unknown option (check the spelling against config/tollgate.example.toml)",
    ]);
  });

  it("rejects duplicate tenant ids and a key shared by two tenants", () => {
    const p = problemsOf(`[[tenants]]\nid="a"\nkeys=[{hash="${HASH}"}]\n[[tenants]]\nid="a"\nkeys=[{hash="${HASH}"}]\n`);
    expect(p).toContain('tenants[1].id: duplicate tenant id "a" (also tenants[0])');
    expect(p).toContain("tenants[1].keys[0].hash: the same key is already used by tenants[0].keys[0]");
  });

  it("reports a duplicate tenant id in the same pass as every other problem", () => {
    const p = problemsOf(
      `[server]\nport = -1\n[[tenants]]\nid="a"\nkeys=[{hash="${HASH}"}]\n[[tenants]]\nid="a"\n[alerts]\nthresholds=[180]\n`,
    );
    expect(p).toContain('tenants[1].id: duplicate tenant id "a" (also tenants[0])');
    expect(p.some((x) => x.startsWith("server.port:"))).toBe(true);
    expect(p.some((x) => x.startsWith("tenants[1].keys:"))).toBe(true);
    expect(p).toContain("alerts.thresholds[0]: expected a percentage from 1 to 100");
  });

  it("accepts alert thresholds only from 1 to 100 %, globally and per tenant", () => {
    expect(problemsOf(`[alerts]\nthresholds = [0, 50, 100, 180]\n`)).toEqual([
      "alerts.thresholds[0]: expected a percentage from 1 to 100",
      "alerts.thresholds[3]: expected a percentage from 1 to 100",
    ]);
    expect(problemsOf(`[[tenants]]\nid="a"\nkeys=[{hash="${HASH}"}]\nalerts={thresholds=[101]}\n`)).toEqual([
      "tenants[0].alerts.thresholds[0]: expected a percentage from 1 to 100",
    ]);
    expect(parseConfigText(`[alerts]\nthresholds = [1, 100]\n`).alerts.thresholds).toEqual([1, 100]);
  });

  it("requires redisUrl when the redis backend is chosen", () => {
    expect(problemsOf(`[state]\nbackend = "redis"\n`)[0]).toMatch(/^state\.redisUrl:/);
  });

  it("names the Sentinel and Cluster fields it needs, and takes one Redis setup only", () => {
    expect(problemsOf(`[state]\nbackend = "redis"\nsentinels = ["127.0.0.1:26379"]\n`)[0]).toMatch(/^state\.sentinelName:/);
    expect(problemsOf(`[state]\nbackend = "redis"\nclusterNodes = ["nohost"]\n`)[0]).toMatch(
      /^state\.clusterNodes\[0\]: expected "host:port"/,
    );
    expect(problemsOf(`[state]\nbackend = "redis"\nredisUrl = "redis://x"\nclusterNodes = ["a:1"]\n`)[0]).toMatch(
      /^state\.sentinels: give one of redisUrl, sentinels or clusterNodes, not several/,
    );
    const ok = parseConfigText(
      `[state]\nbackend = "redis"\nsentinels = ["10.0.0.1:26379"]\nsentinelName = "mymaster"\nconfirmReplicas = 1\n`,
      "c.toml",
    );
    expect(ok.state).toMatchObject({ confirmReplicas: 1, confirmTimeoutMs: 500, endedRetentionDays: 7 });
  });

  it("accepts JSON as well as TOML, with defaults filled in", () => {
    const cfg = parseConfigText(JSON.stringify({ tenants: [{ id: "a", keys: [{ hash: HASH }] }] }), "c.json");
    expect(cfg.tenants[0].scopes).toEqual(["search", "sessions", "sandboxes", "jobs", "agents"]);
    expect(cfg.server.port).toBe(8787);
    expect(cfg.cache.scope).toBe("tenant");
  });

  it("reports a TOML syntax error without a stack trace", () => {
    expect(problemsOf("[server\nport=1")[0]).toMatch(/^\(file\): cannot parse t\.toml/);
  });

  it("names the line and column of a TOML syntax error, as smol-toml reports them", () => {
    expect(problemsOf(`[server]\nport = 1\nhost = = "x"\n`)[0]).toMatch(/^\(file\): cannot parse t\.toml:3:8: /);
  });

  it("validates secrets from the environment by variable name", () => {
    expect(() => secretsFromEnv({ TOLLGATE_WALLET_KEY: "0x1234", TOLLGATE_TOKEN_SECRET: "short" })).toThrowError(
      /TOLLGATE_WALLET_KEY: expected 0x followed by 64 hex characters[\s\S]*TOLLGATE_TOKEN_SECRET: expected at least 32 characters/,
    );
  });

  it("ships an example that covers the schema; `tollgate config check` refuses only its placeholder key hashes", async () => {
    const err = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", "config/tollgate.example.toml"]).catch((e) => e);
    expect(err.code).toBe(1);
    const problems = err.stderr.split("\n").filter((l: string) => l.startsWith("  - "));
    expect(problems).toHaveLength(3);
    for (const p of problems) expect(p).toMatch(/^ {2}- tenants\[\d\]\.keys\[\d\]\.hash: "sha256:0+…" is the example's placeholder/);
    expect(err.stderr).toContain("run `tollgate keys create --tenant ops`");
  });

  it("`tollgate config check` refuses a file without an admin and an OTLP endpoint without a scheme, and warns of the rest", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tg-cfg-"));
    const f = join(dir, "doubtful.toml");
    const hash = `sha256:${"ab".repeat(32)}`;
    await writeFile(f, `[tracing]\notlpEndpoint = "localhost:4318"\n[[tenants]]\nid = "acme"\nkeys = [{ hash = "${hash}" }]\n`);
    const err = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", f]).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr).toContain('tenants: none has the "admin" scope');
    expect(err.stderr).toContain('tracing.otlpEndpoint: "localhost:4318" has no http:// or https:// scheme');
    expect(err.stderr).toContain("warning: state: none: `tollgate start` refuses this file");
    expect(err.stderr).toContain("warning: server.publicOrigin: unset");
    const empty = join(dir, "empty.toml");
    await writeFile(
      empty,
      `[operators.oidc]\nissuer = "https://id.example.com"\nclientId = "tollgate"\nroles = { admin = ["groups:ops"] }\n[state]\nbackend = "redis"\nredisUrl = "redis://127.0.0.1:6379"\n`,
    );
    const ok = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", empty]).catch((e) => e);
    expect(ok.stderr ?? "").toBe("");
    expect(ok.stdout).toContain("OK (0 tenants)");
    expect(ok.stdout).toContain("warning: tenants: none in the file");
    await rm(dir, { recursive: true, force: true });
  });

  it("`tollgate config check` exits non-zero and prints every problem, no stack trace", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tg-cfg-"));
    const f = join(dir, "bad.toml");
    await writeFile(f, `[server]\nport = -1\n[[tenants]]\nid = "X"\n`);
    const err = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", f]).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr).toContain("server.port:");
    expect(err.stderr).toContain("tenants[0].id:");
    expect(err.stderr).toContain("tenants[0].keys: required, expected a list of keys (run `tollgate keys create --tenant ID`");
    expect(err.stderr).not.toMatch(/\n\s+at /);
    await rm(dir, { recursive: true, force: true });
  });

  it("`tollgate config check` takes `keys = []` (every key revoked, as the export writes it) with a warning", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tg-cfg-"));
    const f = join(dir, "keyless.toml");
    await writeFile(f, `[[tenants]]\nid = "ops"\nscopes = ["admin"]\nkeys = [{hash="${HASH}"}]\n[[tenants]]\nid = "gone"\nkeys = []\n`);
    const ok = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", f]);
    expect(ok.stdout).toContain("OK (2 tenants)");
    expect(ok.stdout).toContain('warning: tenants[1].keys: none: no key of "gone" works');
    await rm(dir, { recursive: true, force: true });
  });

  it("`tollgate config check` prints the file, line and column of a TOML syntax error", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tg-cfg-"));
    const f = join(dir, "syntax.toml");
    await writeFile(f, `[server]\nport = 8787\n\n[cache\nenabled = true\n`);
    const err = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", f]).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr).toContain(`${f}:4:`);
    expect(err.stderr).not.toMatch(/\n\s+at /);
    await rm(dir, { recursive: true, force: true });
  });

  it("`tollgate keys create` prints a key once and a config line holding only its hash", async () => {
    const { stdout } = await run("npx", ["tsx", "src/cli/index.ts", "keys", "create", "--tenant", "acme"]);
    const key = stdout.match(/\n {2}(tg_[A-Za-z0-9_-]+)\n/)![1];
    const hash = stdout.match(/hash = "(sha256:[0-9a-f]{64})"/)![1];
    const { hashTenantKey } = await import("../../src/identity/tenants.js");
    expect(await hashTenantKey(key)).toBe(hash);
    const pasted = stdout.slice(stdout.indexOf("keys = ")).trim();
    expect(pasted).not.toContain(key);
    const cfg = parseConfigText(`[[tenants]]\nid = "acme"\n${pasted}\n`);
    expect(cfg.tenants[0].keys[0].hash).toBe(hash);
  });
});
