// The README's "To production", followed as written against the emulator: the documented minimal config (the file the
// README quotes, on Redis), a key per tenant from `tollgate keys create` pasted over its `keys` line, the rehearsal's
// edits (upstream, allowed hosts, payments and Redis pointed at what runs here), the three secrets in the environment and
// nothing else, then `tollgate start --config FILE`: ready, a search paid on chain, a credit-billed search, a sandbox
// (exec through the SDK) and a session, a tenant, key and OAuth grant made through the gateway, the operator's metrics
// and the tenant's usage. Then a restart: spend, tenants, keys, grants, the audit and the sandbox's owner are where they
// were. SIGTERM drains and exits 0; no secret in the output. Without [state], `start` refuses and says what to add.
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { consentForm, pkcePair, postForm, registerClient } from "../helpers/mcp-oauth.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";
import { freePort } from "../helpers/free-port.js";

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

interface Started {
  gw: string;
  output: () => string;
  /** SIGTERM; resolves with how it exited (SIGKILL to the group after 30 s). */
  stop(): Promise<unknown>;
}

/** `tollgate start --config FILE` as its own process group, resolved once it listens. */
async function start(file: string, env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [...CLI, "start", "--config", file], { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once("exit", (code, signal) => r({ code, signal })),
  );
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const exit = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 30_000))]);
    if (exit === "timeout") process.kill(-child.pid!, "SIGKILL");
    return exit;
  };
  try {
    const gw = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tollgate start did not listen:\n${out}`)), 60_000);
      const look = () => {
        // Listening, and its summary printed (the last line names the watched files).
        const m = /listening on (http:\/\/[\d.:]+)[\s\S]*\n {2}watching .*\n/.exec(out);
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
    return { gw, output: () => out, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

describe("README: To production", () => {
  let emu: EmulatorHandle;
  let redis: RedisServer;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tg-to-production-"));
    [emu, redis] = await Promise.all([startEmulator({ modules: ["x402", "sandboxes", "sessions"] }), startRedisServer()]);
  }, 120_000);
  afterAll(async () => {
    await emu?.close();
    await redis?.stop();
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
    // The rehearsal: upstream, allowed hosts, payments and Redis pointed at what runs here; the gateway's origin at
    // its own address (handed-out runtime URLs are built on it; 8787 may be taken on a shared machine).
    const port = await freePort();
    const origin = `http://localhost:${port}`;
    toml = edit(toml, "server", "port", String(port));
    toml = edit(toml, "server", "publicOrigin", JSON.stringify(origin));
    toml = edit(toml, "upstream", "baseUrl", JSON.stringify(emu.controlUrl));
    // The host the emulator's runtime hands out (its banner's allowedHost): localhost, not the address it listens on.
    toml = edit(toml, "upstream", "allowedHosts", JSON.stringify([`localhost:${new URL(emu.runtimeUrl).port}`]));
    toml = edit(toml, "payments", "networks", JSON.stringify([chain.network]));
    toml = edit(toml, "payments", "assets", JSON.stringify([chain.token.address]));
    toml = edit(toml, "payments", "rpc", `{ ${JSON.stringify(chain.network)} = ${JSON.stringify(chain.rpcUrl)} }`);
    toml = edit(toml, "state", "redisUrl", JSON.stringify(`${redis.url}/0`));
    const file = join(dir, "tollgate.toml");
    await writeFile(file, toml);
    const check = await run(process.execPath, [...CLI, "config", "check", file]);
    expect(check.stdout).toContain("OK (2 tenants)");

    // Step 3 and 4: the three secrets and nothing else of Tollgate's in the environment; `start --config FILE`.
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" };
    env.TOLLGATE_UPSTREAM_API_KEY = emu.apiKey;
    env.TOLLGATE_WALLET_KEY = wallet.privateKey;
    env.TOLLGATE_TOKEN_SECRET = "p".repeat(64);
    const outputs: string[] = [];
    let first: Started | undefined = await start(file, env);
    let second: Started | undefined;
    const secrets = [teamA.key, ops.key, emu.apiKey, wallet.privateKey, env.TOLLGATE_TOKEN_SECRET];
    try {
      const gw = first.gw;
      expect(first.output()).toContain(`fronting ${emu.controlUrl}`);
      // What it runs with, said at start.
      expect(first.output()).toMatch(/^ {2}state {5}redis redis:\/\/127\.0\.0\.1:\d+\/0$/m);
      expect(first.output()).toMatch(new RegExp(`^  wallet    ${wallet.address} \\(TOLLGATE_WALLET_KEY\\)$`, "m"));
      expect(first.output()).toContain(`  origin    ${origin}`);
      expect(first.output()).toContain(`  watching  ${file}`);

      const ready = await fetch(`${gw}/_tollgate/ready`);
      expect(ready.status, first.output()).toBe(200);
      const readyBody = await ready.json();
      expect(readyBody.status).toBe("ready");
      expect(readyBody.checks.state).toMatchObject({ ok: true, backend: "redis" });
      expect(readyBody.checks.state.rehearsal).toBeUndefined();

      const asTeamA = (path: string, init: RequestInit = {}) =>
        fetch(`${gw}${path}`, { ...init, headers: { "x-api-key": teamA.key, "content-type": "application/json", ...init.headers } });
      const asOps = (path: string, init: RequestInit = {}) =>
        fetch(`${gw}${path}`, { ...init, headers: { "x-api-key": ops.key, "content-type": "application/json", ...init.headers } });
      const search = (path: string) => asTeamA(path, { method: "POST", body: JSON.stringify({ query: "electric vehicle charging" }) });
      const paid = await search("/x402/web/search");
      expect(paid.status, first.output()).toBe(200);
      expect(paid.headers.get("x-tollgate-paid")).toBe("0.005");
      expect((await paid.json()).data.results.length).toBeGreaterThan(0);
      const credits = await search("/api/web/search");
      expect(credits.status, first.output()).toBe(200);

      // A sandbox (a command run in it through the SDK, on the gateway's origin) and a session.
      const sdk = new Hyperbrowser({ apiKey: teamA.key, baseUrl: origin });
      const sbx = await sdk.sandboxes.create({ imageName: "node" });
      expect((await sbx.exec("echo to-production")).stdout).toContain("to-production");
      const session = await sdk.sessions.create();
      expect(session.id).toBeTruthy();
      expect((await sdk.sessions.stop(session.id)).success).toBe(true);

      // A tenant and its key made through the admin API, and an OAuth grant team-a consented to.
      const made = await asOps("/_tollgate/admin/tenants", {
        method: "POST",
        body: JSON.stringify({ id: "team-b", scopes: ["search"], budget: { daily: "1.00" } }),
      });
      expect(made.status, await made.clone().text()).toBe(201);
      const teamB = ((await made.json()) as { key: string }).key;
      secrets.push(teamB);
      await oauthGrant(gw, teamA.key);

      const usage = await (await asTeamA("/_tollgate/usage")).json();
      expect(JSON.stringify(usage)).toContain("5.00");
      const metrics = await asOps("/_tollgate/metrics");
      expect(metrics.status).toBe(200);
      const text = await metrics.text();
      expect(text).toMatch(/^tollgate_state_up 1$/m);
      expect(text).toMatch(/^tollgate_budget_remaining_usd\{tenant="team-a",window="daily"\} 4\.9/m);

      const before = await remembered(gw, ops.key, teamA.key, teamB, sbx.id);
      expect(before.grants).toHaveLength(1);
      expect(before.audit).toContain("tenant.create");
      expect(Number(before.spent)).toBeGreaterThan(0.005);
      expect(before).toMatchObject({ teamB: 200, sandbox: 200 });
      expect(before.tenants).toEqual(["ops", "team-a", "team-b"]);

      // The restart: stopped (drained, exit 0), started again on the same file.
      expect(await first.stop()).toEqual({ code: 0, signal: null });
      outputs.push(first.output());
      first = undefined;
      second = await start(file, env);
      const after = await remembered(second.gw, ops.key, teamA.key, teamB, sbx.id);
      expect(after).toEqual(before);
      expect((await (await fetch(`${second.gw}/_tollgate/ready`)).json()).status).toBe("ready");
    } finally {
      if (first) outputs.push(first.output());
      await first?.stop();
      if (second) {
        expect(await second.stop()).toEqual({ code: 0, signal: null });
        outputs.push(second.output());
      }
    }
    for (const secret of secrets) for (const out of outputs) expect(out).not.toContain(secret);
  }, 300_000);

  it("refuses a file without [state] and says what to add", async () => {
    const toml = (await readFile(EXAMPLE, "utf8")).replace(/^\[state\][^[]*/m, "");
    const file = join(dir, "no-state.toml");
    await writeFile(file, toml);
    const r = await run(process.execPath, [...CLI, "start", "--config", file], {
      env: { PATH: process.env.PATH ?? "", TOLLGATE_UPSTREAM_API_KEY: "k", TOLLGATE_TOKEN_SECRET: "p".repeat(64) },
    }).catch((e) => e);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("has no [state]");
    expect(r.stderr).toContain('redisUrl = "redis://127.0.0.1:6379"');
    expect(r.stderr).toContain("rehearsal = true");
    const memory = join(dir, "memory.toml");
    await writeFile(memory, `${toml}\n[state]\nbackend = "memory"\n`);
    const m = await run(process.execPath, [...CLI, "start", "--config", memory], {
      env: { PATH: process.env.PATH ?? "", TOLLGATE_UPSTREAM_API_KEY: "k", TOLLGATE_TOKEN_SECRET: "p".repeat(64) },
    }).catch((e) => e);
    expect(m.code).toBe(1);
    expect(m.stderr).toContain('state.backend is "memory" without state.rehearsal = true');
  }, 60_000);
});

/** What must outlive a restart: team-a's spend, team-b and its key, the grant, the audit and the sandbox's owner. */
async function remembered(gw: string, opsKey: string, teamAKey: string, teamBKey: string, sandbox: string) {
  const get = (path: string, key: string) => fetch(`${gw}${path}`, { headers: { "x-api-key": key } });
  const usage = (await (await get("/_tollgate/usage", teamAKey)).json()) as { daily: { spent: string } };
  const tenants = ((await (await get("/_tollgate/admin/tenants", opsKey)).json()) as { tenants: Array<{ id: string }> }).tenants;
  const grants = ((await (await get("/_tollgate/admin/grants?tenant=team-a", opsKey)).json()) as { grants: Array<{ id: string }> }).grants;
  const audit = ((await (await get("/_tollgate/admin/audit?limit=100", opsKey)).json()) as { entries: Array<{ action: string }> }).entries;
  return {
    spent: usage.daily.spent,
    usage: JSON.stringify(usage),
    tenants: tenants.map((t) => t.id).sort(),
    teamB: (await get("/_tollgate/whoami", teamBKey)).status,
    grants: grants.map((g) => g.id),
    audit: [...new Set(audit.map((e) => e.action))].sort(),
    sandbox: (await get(`/api/sandbox/${sandbox}`, teamAKey)).status,
  };
}

/** Registration, team-a's consent and the code exchange: a grant (/_tollgate/admin/grants lists it). */
async function oauthGrant(gw: string, credential: string): Promise<void> {
  const redirect = "http://127.0.0.1:9/oauth/callback";
  const client = await (await registerClient(fetch, gw, "To-production Agent", redirect)).json();
  const { verifier, challenge } = await pkcePair();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: redirect,
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope: "search",
  });
  const page = await (await fetch(`${gw}/authorize?${q}`)).text();
  const back = await postForm(fetch, `${gw}/authorize`, consentForm(page, { credential, days: "1" }));
  const code = new URL(back.headers.get("location")!).searchParams.get("code")!;
  const tokens = await (
    await postForm(fetch, `${gw}/token`, {
      grant_type: "authorization_code",
      code,
      client_id: client.client_id,
      redirect_uri: redirect,
      code_verifier: verifier,
    })
  ).json();
  expect(tokens.access_token, JSON.stringify(tokens)).toBeDefined();
}
