// `tollgate secrets put|list|get|rm` (issue 57): the compiled CLI (bin/tollgate.js, dist/) against a running gateway. An
// operator writes any tenant's secret with --tenant, a tenant its own with its key; the value goes in on stdin or from
// --value-file, or is typed at a prompt that does not echo it (in a real PTY), and never comes out: not on the CLI's stdout or stderr, not in a list, not in the gateway's log; a value
// given as an argument is refused before anything is sent; a refused field is named by its flag, with what to do next.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { spawn as spawnPty } from "@lydell/node-pty";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

const ROOT = join(import.meta.dirname, "../..");
const BIN = join(ROOT, "bin/tollgate.js");
const keys = { ops: generateTenantKey(), acme: generateTenantKey(), watch: generateTenantKey() };
const VALUE = `sk-cli-${randomBytes(12).toString("hex")}`;
const NEXT = `sk-cli-next-${randomBytes(12).toString("hex")}`;
const OWN = `sk-own-${randomBytes(12).toString("hex")}`;
const TYPED = `sk-typed-${randomBytes(12).toString("hex")}`;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
let scratch: string;
const seen: string[] = [];

/** Runs the compiled CLI's `secrets …` with `input` on stdin (closed at once when none). */
const cli = (args: string[], opts: { input?: string; key?: string } = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, "secrets", ...args],
      { cwd: ROOT, env: { ...process.env, TOLLGATE_GATEWAY: gw.url, TOLLGATE_ADMIN_KEY: opts.key ?? keys.ops } },
      (err, stdout, stderr) => {
        seen.push(stdout, stderr);
        resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr });
      },
    );
    child.stdin!.end(opts.input ?? "");
  });

const api = async (path: string, key = keys.ops) => {
  const res = await fetch(`${gw.url}${path}`, { headers: { "x-api-key": key } });
  const text = await res.text();
  seen.push(text);
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
};

beforeAll(async () => {
  // Incremental: a no-op when dist/ is current (setup.sh builds it); the CLI run below must be this checkout's code.
  await promisify(execFile)("npm", ["run", "build", "--silent"], { cwd: ROOT, timeout: 300_000 });
  scratch = await mkdtemp(join(tmpdir(), "tg-cli-secrets-"));
  gw = await startTestGateway(
    {
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
        { id: "acme", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(keys.acme) }] },
        { id: "watch", scopes: ["operator-readonly"], keys: [{ hash: await hashTenantKey(keys.watch) }] },
      ],
    },
    { upstreamApiKey: "k", tokenSecret: randomBytes(32).toString("hex") },
  );
}, 320_000);

afterAll(async () => {
  await gw?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("tollgate secrets against a running gateway", () => {
  it("puts a tenant's secret from stdin, replaces it from a file, and never prints the value", async () => {
    const put = await cli(
      [
        "put",
        "OPENAI",
        "--tenant",
        "acme",
        "--host",
        "api.openai.com",
        "--host",
        "api.openai.com:8443",
        "--method",
        "get",
        "--method",
        "POST",
        "--path",
        "/v1/",
        "--header",
        "x-api-key",
        "--format",
        "{}",
      ],
      { input: `${VALUE}\n` },
    );
    expect(put.stderr).toBe("");
    expect(put.code).toBe(0);
    expect(put.stdout).toContain('Secret OPENAI created for tenant "acme" (version 1');
    expect(put.stdout).toContain("hosts api.openai.com, api.openai.com:8443; methods GET, POST; paths /v1/; header x-api-key: {}");
    const got = await api("/_tollgate/admin/secrets/acme/OPENAI");
    expect(got.json).toMatchObject({
      name: "OPENAI",
      hosts: ["api.openai.com", "api.openai.com:8443"],
      methods: ["GET", "POST"],
      paths: ["/v1/"],
      header: "x-api-key",
      format: "{}",
      version: 1,
    });
    // The final newline a pipe adds is not part of the value.
    expect((await gw.gateway.services.vault.valueFor("acme", "OPENAI"))?.value).toBe(VALUE);

    const file = join(scratch, "openai.txt");
    await writeFile(file, `${NEXT}\n`, { mode: 0o600 });
    const replaced = await cli(["put", "OPENAI", "--tenant", "acme", "--host", "api.openai.com", "--value-file", file]);
    expect(replaced.code).toBe(0);
    expect(replaced.stdout).toContain('Secret OPENAI replaced for tenant "acme" (version 2');
    expect(replaced.stdout).toContain("methods any; paths any; header authorization: Bearer {}");
    expect((await gw.gateway.services.vault.valueFor("acme", "OPENAI"))?.value).toBe(NEXT);
  }, 60_000);

  it("lists name, hosts, methods, paths, header, updated and last used as aligned columns, never a value", async () => {
    expect((await cli(["put", "GITHUB", "--tenant", "acme", "--host", "api.github.com", "--method", "GET"], { input: VALUE })).code).toBe(
      0,
    );
    await gw.gateway.services.vault.noteUse("acme", "GITHUB");
    const listed = await cli(["list", "--tenant", "acme"]);
    expect(listed.code).toBe(0);
    const [head, ...rows] = listed.stdout.trimEnd().split("\n");
    const titles = ["NAME", "HOSTS", "METHODS", "PATHS", "HEADER", "UPDATED", "LAST USED"];
    expect(head!.split(/ {2,}/)).toEqual(titles);
    expect(rows.map((r) => r.split(/ {2,}/)[0])).toEqual(["GITHUB", "OPENAI"]);
    const github = rows[0]!.split(/ {2,}/);
    expect(github.slice(0, 5)).toEqual(["GITHUB", "api.github.com", "GET", "any", "authorization"]);
    expect(github[5]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(github[6]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(rows[1]!.split(/ {2,}/)[6]).toBe("never");
    // Every column starts where its title does.
    for (const t of titles.slice(1)) {
      const at = head!.indexOf(t);
      for (const r of rows) {
        expect(r.slice(at - 2, at), r).toBe("  ");
        expect(r[at], r).not.toBe(" ");
      }
    }
    const json = await cli(["list", "--tenant", "acme", "--json"]);
    expect(JSON.parse(json.stdout).secrets).toHaveLength(2);
    const one = await cli(["get", "GITHUB", "--tenant", "acme"]);
    expect(JSON.parse(one.stdout)).toMatchObject({ name: "GITHUB", methods: ["GET"] });
  }, 60_000);

  it("refuses a value given as an argument before sending anything", async () => {
    for (const args of [
      ["put", "LEAK", "--tenant", "acme", "--host", "x.example.com", "--value", VALUE],
      ["put", "LEAK", "--tenant", "acme", "--host", "x.example.com", `--value=${VALUE}`],
    ]) {
      const r = await cli(args, { input: NEXT });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("never taken from the command line");
      expect(r.stderr).toContain("--value-file FILE");
      expect(r.stderr).not.toContain(VALUE);
    }
    expect((await api("/_tollgate/admin/secrets/acme/LEAK")).status).toBe(404);
  }, 60_000);

  it("names the flag at fault and says what to do next", async () => {
    const host = await cli(["put", "BAD", "--tenant", "acme", "--host", "https://api.example.com/v1", "--method", "FETCH"], {
      input: VALUE,
    });
    expect(host.code).toBe(1);
    expect(host.stderr).toContain('--host "https://api.example.com/v1": expected a host or host:port');
    expect(host.stderr).toContain('--method "FETCH": expected an HTTP method');
    expect(host.stderr).toContain("Nothing was written; correct these and run the command again.");
    const format = await cli(["put", "BAD", "--tenant", "acme", "--host", "api.example.com", "--format", "Bearer"], { input: VALUE });
    expect(format.stderr).toContain('--format: expected the format to hold "{}" exactly once');
    const noHost = await cli(["put", "BAD", "--tenant", "acme"], { input: VALUE });
    expect(noHost.stderr).toContain("--host HOST[:PORT]: name at least one host BAD may be sent to");
    const empty = await cli(["put", "BAD", "--tenant", "acme", "--host", "api.example.com"], { input: "\n" });
    expect(empty.stderr).toContain("the value of BAD is empty: pipe it on stdin");
    const name = await cli(["put", "9BAD", "--tenant", "acme", "--host", "api.example.com"], { input: VALUE });
    expect(name.stderr).toContain("9BAD: a secret's name is an environment variable's");
    const tenant = await cli(["list", "--tenant", "nope"]);
    expect(tenant.stderr).toContain("--tenant nope: no such tenant (`tollgate tenants list` names them)");
    const readonly = await cli(["put", "BAD", "--tenant", "acme", "--host", "api.example.com"], { input: VALUE, key: keys.watch });
    expect(readonly.code).toBe(1);
    expect(readonly.stderr).toContain("--tenant needs a key with the admin scope");
    for (const r of [host, format, noHost, empty, name, tenant, readonly]) {
      expect(r.code).toBe(1);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
    expect((await api("/_tollgate/admin/secrets/acme/BAD")).status).toBe(404);
  }, 60_000);

  it("lets a tenant manage its own secrets with its key, and removes one", async () => {
    const put = await cli(["put", "DB", "--host", "db.example.com:5432"], { input: OWN, key: keys.acme });
    expect(put.code).toBe(0);
    expect(put.stdout).toContain("Secret DB created (version 1");
    // Limited to sandboxes made from some images or snapshots (docs/secrets-for-agents.md, "Which sandboxes").
    const limited = await cli(["put", "DB", "--host", "db.example.com:5432", "--image", "node", "--snapshot", "base-1"], {
      input: OWN,
      key: keys.acme,
    });
    expect(limited.code).toBe(0);
    expect(limited.stdout).toContain("images node; snapshots base-1");
    const mine = await cli(["list"], { key: keys.acme });
    expect(mine.stdout.split("\n").map((l) => l.split(/ {2,}/)[0])).toContain("DB");
    // An operator sees it under the tenant; the operator's own list is its own tenant's (empty).
    expect((await cli(["list", "--tenant", "acme"])).stdout).toContain("db.example.com:5432");
    expect((await cli(["list"])).stdout).toContain("No secrets. Add one: tollgate secrets put NAME --host HOST < value-file");

    const gone = await cli(["rm", "DB"], { key: keys.acme });
    expect(gone.code).toBe(0);
    expect(gone.stdout).toContain("Secret DB deleted: its placeholders are refused fleet-wide from now on.");
    const again = await cli(["rm", "DB"], { key: keys.acme });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("DB: this key's tenant has no secret by that name (`tollgate secrets list` lists them)");
    expect((await cli(["rm", "GITHUB", "--tenant", "acme"])).stdout).toContain('Secret GITHUB deleted from tenant "acme"');
    expect((await api("/_tollgate/secrets/GITHUB", keys.acme)).status).toBe(404);
  }, 60_000);

  it("on a terminal, asks for the value without echoing it", async () => {
    const term = spawnPty(process.execPath, [BIN, "secrets", "put", "TYPED", "--tenant", "acme", "--host", "api.typed.example"], {
      cwd: ROOT,
      env: { ...process.env, TOLLGATE_GATEWAY: gw.url, TOLLGATE_ADMIN_KEY: keys.ops } as Record<string, string>,
      cols: 200,
      rows: 24,
    });
    let screen = "";
    term.onData((d) => void (screen += d));
    const exited = new Promise<number>((r) => term.onExit((e) => r(e.exitCode)));
    const deadline = Date.now() + 30_000;
    while (!screen.includes("Value of TYPED (not shown): ") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(screen).toContain("Value of TYPED (not shown): ");
    term.write(`${TYPED.slice(0, 8)}x\u007f${TYPED.slice(8)}\r`); // a typo taken back with Backspace
    expect(await exited).toBe(0);
    seen.push(screen);
    expect(screen).toContain('Secret TYPED created for tenant "acme"');
    expect(screen).not.toContain(TYPED.slice(8)); // what an echo would have shown after the typo
    expect((await gw.gateway.services.vault.valueFor("acme", "TYPED"))?.value).toBe(TYPED);
  }, 60_000);

  it("never let a value out: not in any output of the CLI, any answer, nor the gateway's log", () => {
    const everything = [...seen, ...gw.logs].join("\n");
    expect(everything).toContain("OPENAI");
    for (const v of [VALUE, NEXT, OWN, TYPED]) expect(everything).not.toContain(v);
  });
});
