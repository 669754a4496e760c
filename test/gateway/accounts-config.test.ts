// [[upstream.accounts]] and tenants' `accounts`: validated by the schema, every problem named by its exact path, the
// keys read from where each account says; `tollgate config check` names a bad account block.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { accountApiKeysFromEnv, ConfigError, parseConfigText } from "../../config/load.js";
import { accountApiKeys } from "../../config/load-node.js";

const run = promisify(execFile);
const KEY = `keys = [{ hash = "sha256:${"a".repeat(64)}" }]`;

function problems(toml: string): string[] {
  try {
    parseConfigText(toml);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const TWO = `
[[upstream.accounts]]
id = "main"
apiKeyEnv = "KEY_MAIN"
limits = { sessions = 2, sandboxes = 1 }
weight = 3
[[upstream.accounts]]
id = "spare"
apiKeyEnv = "KEY_SPARE"
`;

describe("upstream accounts in config", () => {
  it("no block: no accounts, exactly as before", () => {
    const cfg = parseConfigText(`[[tenants]]\nid = "acme"\n${KEY}\n`);
    expect(cfg.upstream.accounts).toBeUndefined();
    expect(cfg.tenants[0].accounts).toBeUndefined();
    expect(accountApiKeysFromEnv(cfg, {})).toBeUndefined();
  });

  it("reads accounts with defaults and a tenant pinned to one", () => {
    const cfg = parseConfigText(`${TWO}\n[[tenants]]\nid = "acme"\naccounts = ["spare"]\n${KEY}\n`);
    expect(cfg.upstream.accounts).toEqual([
      { id: "main", apiKeyEnv: "KEY_MAIN", limits: { sessions: 2, sandboxes: 1 }, weight: 3 },
      { id: "spare", apiKeyEnv: "KEY_SPARE", limits: {}, weight: 1 },
    ]);
    expect(cfg.tenants[0].accounts).toEqual(["spare"]);
    expect(accountApiKeysFromEnv(cfg, { KEY_MAIN: "k-main", KEY_SPARE: " k-spare\n" })).toEqual({ main: "k-main", spare: "k-spare" });
  });

  it("names each bad field by its exact path", () => {
    const got = problems(`
[[upstream.accounts]]
id = "ok"
apiKeyEnv = "K1"
[[upstream.accounts]]
id = "Bad Id"
apiKeyEnv = "no spaces allowed"
limits = { sessions = -1, cpus = 2 }
weight = 1.5
[[upstream.accounts]]
id = "neither"
`);
    expect(got).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^upstream\.accounts\[1\]\.id: expected a lowercase account id/),
        expect.stringMatching(/^upstream\.accounts\[1\]\.apiKeyEnv: expected an environment variable name/),
        expect.stringMatching(/^upstream\.accounts\[1\]\.limits\.sessions: /),
        expect.stringMatching(/^upstream\.accounts\[1\]\.limits\.cpus: unknown option/),
        expect.stringMatching(/^upstream\.accounts\[1\]\.weight: /),
        expect.stringMatching(/^upstream\.accounts\[2\]\.apiKeyEnv: expected one of apiKeyEnv = "VARIABLE" or apiKeyFile/),
      ]),
    );
  });

  it("refuses a duplicate account id, both key sources, and a tenant pinned to an unknown account", () => {
    const dup = problems(`${TWO}\n[[upstream.accounts]]\nid = "main"\napiKeyEnv = "K"\napiKeyFile = "/k"\n`);
    expect(dup).toEqual([
      expect.stringMatching(/^upstream\.accounts\[2\]\.apiKeyEnv: expected one of/),
      `upstream.accounts[2].id: duplicate account id "main" (also upstream.accounts[0])`,
    ]);
    const dup2 = problems(`${TWO}\n[[upstream.accounts]]\nid = "main"\napiKeyEnv = "K"\n`);
    expect(dup2).toEqual([`upstream.accounts[2].id: duplicate account id "main" (also upstream.accounts[0])`]);
    const pinned = problems(`${TWO}\n[[tenants]]\nid = "acme"\naccounts = ["main", "elsewhere"]\n${KEY}\n`);
    expect(pinned).toEqual(['tenants[0].accounts[1]: unknown account "elsewhere" (expected one of main, spare)']);
    const none = problems(`[[tenants]]\nid = "acme"\naccounts = ["main"]\n${KEY}\n`);
    expect(none).toEqual(['tenants[0].accounts[0]: names account "main" but no [[upstream.accounts]] is configured']);
    expect(problems(`[upstream]\naccounts = []\n`)).toEqual([expect.stringMatching(/^upstream\.accounts: expected at least one/)]);
  });

  it("names the account whose key is missing, never a key", async () => {
    const cfg = parseConfigText(TWO);
    expect(() => accountApiKeysFromEnv(cfg, { KEY_MAIN: "secret-main" })).toThrowError(
      /upstream\.accounts\[1\]\.apiKeyEnv: the environment variable KEY_SPARE \(account "spare"\) is not set/,
    );
    const dir = await mkdtemp(join(tmpdir(), "tg-acct-"));
    try {
      const file = join(dir, "spare.key");
      await writeFile(file, "from-a-file\n");
      const withFile = parseConfigText(TWO.replace('apiKeyEnv = "KEY_SPARE"', `apiKeyFile = "${file}"`));
      expect(await accountApiKeys(withFile, { KEY_MAIN: "m" })).toEqual({ main: "m", spare: "from-a-file" });
      expect(() => accountApiKeysFromEnv(withFile, { KEY_MAIN: "m" })).toThrowError(
        /upstream\.accounts\[1\]\.apiKeyFile: files cannot be read here/,
      );
      const missing = parseConfigText(TWO.replace('apiKeyEnv = "KEY_SPARE"', `apiKeyFile = "${join(dir, "nope")}"`));
      await expect(accountApiKeys(missing, { KEY_MAIN: "m" })).rejects.toThrowError(
        /upstream\.accounts\[1\]\.apiKeyFile: cannot read .*ENOENT/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("`tollgate config check` names a bad account block by its path, and counts good ones", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tg-acct-"));
    try {
      const bad = join(dir, "bad.toml");
      await writeFile(bad, `[[upstream.accounts]]\nid = "a"\napiKeyEnv = "K"\n[[upstream.accounts]]\nid = "b"\napiKeyEnv = "bad name"\n`);
      const err = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", bad]).catch((e) => e);
      expect(err.code).toBe(1);
      expect(err.stderr).toContain("upstream.accounts[1].apiKeyEnv: expected an environment variable name");
      expect(err.stderr).not.toMatch(/\n\s+at /);
      const good = join(dir, "good.toml");
      const ops = `[[tenants]]\nid = "ops"\nscopes = ["admin"]\nkeys = [{ hash = "sha256:${"b".repeat(64)}" }]\n`;
      await writeFile(good, `${TWO}\n[[tenants]]\nid = "acme"\naccounts = ["main"]\n${KEY}\n${ops}`);
      const { stdout } = await run("npx", ["tsx", "src/cli/index.ts", "config", "check", good]);
      expect(stdout).toContain("OK (2 tenants, 2 upstream accounts)");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
