// Per-account wallets and account keys re-read on rotation (issue 45, docs/accounts.md#wallets): the gateway in front of
// an emulator running three accounts with the x402 half on a local chain. Each account has its own wallet (generated
// and funded at run time: a's key from a variable, b's from a file, c's held by a remote signer), beside the gateway's
// own: a tenant pinned to an account pays from that account's wallet, an unpinned one from the gateway's; each
// wallet's on-chain spend equals the ledger's committed spend of its payer, also after payments whose outcome was
// unknown are reconciled from the chain; budgets stay per tenant. An account's key file rotated while the SDK runs:
// no request fails.
import { randomBytes } from "node:crypto";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { accountWalletKeysFromEnv, ConfigError, parseConfig } from "../../config/load.js";
import { accountApiKeys, accountWalletKeys } from "../../config/load-node.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { search } from "../helpers/paid-stack.js";

const run = promisify(execFile);
const PRICE = 5000n; // $0.005, the emulator's search price

type Wallet = { address: `0x${string}`; privateKey: `0x${string}` };
type Entry = { id: string; state: string; amount: string; payer?: string; account?: string; validBefore?: string; nonce?: string };

let emu: EmulatorHandle;
let gw: RunningGateway;
let dir: string;
let proxy: Awaited<ReturnType<typeof startProxy>>;
const keys: Record<string, string> = {};
const wallets: Record<"gateway" | "a" | "b" | "c", Wallet> = {} as never;
let signer: { child: ChildProcess; stop(): Promise<void> } | undefined;
const files = { keyA: "", walletB: "", config: "" };
const logs: string[] = [];
let network = "";
let asset = "";
let rpcUrl = "";

/**
 * A proxy in front of the emulator's control plane that, while `stall` is set, forwards a paid request (so the
 * upstream settles) and never answers it: the gateway cannot know whether it paid (as after a lost connection).
 */
async function startProxy(target: string) {
  const t = new URL(target);
  const state = { stall: false };
  const server = createServer((req, res) => {
    const paid = !!(req.headers["payment-signature"] || req.headers["x-payment"]);
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      if (paid && state.stall) return void ur.resume();
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** `tollgate signer serve` holding account c's wallet key, on a Unix socket (the gateway holds none of it). */
async function startSigner(socket: string, key: string) {
  const chain = emu.chain!;
  const args = ["--import", "tsx", "src/cli/index.ts", "signer", "serve", "--socket", socket, "--state", `${socket}.state.json`];
  args.push("--networks", chain.network, "--assets", chain.token.address, "--payees", chain.payee);
  args.push("--max-per-authorization", "0.10", "--max-per-day", "1.00");
  const child = spawn(process.execPath, args, {
    env: { ...process.env, TOLLGATE_SIGNER_KEY: key },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signer did not start:\n${out}`)), 30_000);
    child.stderr!.on("data", () => out.includes("tollgate signer listening") && (clearTimeout(timer), resolve()));
    child.once("exit", (code) => (clearTimeout(timer), reject(new Error(`signer exited with ${code}:\n${out}`))));
  });
  return {
    child,
    async stop() {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {}
      await exited;
    },
  };
}

const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** Replaces a file the way Kubernetes updates a mounted secret: a new file renamed over the old one. */
async function swap(path: string, content: string) {
  await writeFile(`${path}.new`, content, { mode: 0o600 });
  await rename(`${path}.new`, path);
}

const ledgerOf = async (tenant: string): Promise<Entry[]> =>
  (await (await fetch(`${gw.url}/_tollgate/ledger?limit=1000`, { headers: { "x-api-key": keys[tenant]! } })).json()).entries;

const balances = async () => ({
  gateway: await emu.chain!.balanceOf(wallets.gateway.address),
  a: await emu.chain!.balanceOf(wallets.a.address),
  b: await emu.chain!.balanceOf(wallets.b.address),
  c: await emu.chain!.balanceOf(wallets.c.address),
});

/** Committed amounts of the given tenants' ledgers, by payer address (lowercase). */
async function committedByPayer(tenants: string[]): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  for (const t of tenants)
    for (const e of await ledgerOf(t))
      if (e.state === "committed") out.set(e.payer!.toLowerCase(), (out.get(e.payer!.toLowerCase()) ?? 0n) + BigInt(e.amount));
  return out;
}

beforeAll(async () => {
  emu = await startEmulator({ modules: ["x402", "sessions"], record: true, accounts: [{ id: "a" }, { id: "b" }, { id: "c" }] });
  const chain = emu.chain!;
  network = chain.network;
  asset = chain.token.address;
  rpcUrl = chain.rpcUrl;
  proxy = await startProxy(emu.controlUrl);
  wallets.gateway = await chain.createFundedWallet(1_000_000n);
  wallets.a = await chain.createFundedWallet(1_000_000n);
  wallets.b = await chain.createFundedWallet(1_000_000n);
  wallets.c = await chain.createFundedWallet(1_000_000n);
  dir = await mkdtemp(join(tmpdir(), "tg-acct-wallets-"));
  signer = await startSigner(join(dir, "signer-c.sock"), wallets.c.privateKey);
  files.keyA = join(dir, "upstream-key-a");
  files.walletB = join(dir, "wallet-key-b");
  await writeFile(files.keyA, `${emu.accounts.get("a")!.apiKey}\n`, { mode: 0o600 });
  await writeFile(files.walletB, `${wallets.b.privateKey}\n`, { mode: 0o600 });
  const tenants = [];
  for (const [id, extra] of [
    ["pinned-a", { accounts: ["a"], budget: { daily: "0.015" } }],
    ["pinned-a-2", { accounts: ["a"] }],
    ["pinned-b", { accounts: ["b"] }],
    ["pinned-c", { accounts: ["c"] }],
    ["unpinned", {}],
    ["ops", { scopes: ["admin", "search", "sessions"] }],
  ] as const) {
    keys[id] = generateTenantKey();
    tenants.push({ id, scopes: ["search", "sessions"], ...extra, keys: [{ hash: await hashTenantKey(keys[id]) }] });
  }
  const raw = {
    server: { host: "127.0.0.1", port: 0, logLevel: "info" },
    upstream: {
      baseUrl: proxy.url,
      timeoutMs: 1500,
      accounts: [
        { id: "a", apiKeyFile: files.keyA, walletKeyEnv: "TEST_WALLET_KEY_A" },
        { id: "b", apiKeyEnv: "TEST_UPSTREAM_KEY_B", walletKeyFile: files.walletB },
        { id: "c", apiKeyEnv: "TEST_UPSTREAM_KEY_C", walletSigner: { socket: join(dir, "signer-c.sock") } },
      ],
    },
    payments: {
      networks: [network],
      assets: [asset],
      maxPerRequest: "0.50",
      rpc: { [network]: rpcUrl },
      maxAuthorizationSeconds: 12,
      minWalletBalance: "0.10",
    },
    secrets: { checkSeconds: 0.1 },
    // The wallet.low rule, evaluated only when the test asks (alerts.runOnce).
    alerts: { rules: { walletBelow: "0.99" }, evaluateSeconds: 3600 },
    tenants,
  };
  const config = parseConfig(raw);
  files.config = join(dir, "tollgate.json");
  await writeFile(files.config, JSON.stringify({ ...raw, tenants: [] }));
  // The keys as `tollgate start` reads them: from each account's variable or file.
  const env = {
    TEST_WALLET_KEY_A: wallets.a.privateKey,
    TEST_UPSTREAM_KEY_B: emu.accounts.get("b")!.apiKey,
    TEST_UPSTREAM_KEY_C: emu.accounts.get("c")!.apiKey,
  };
  gw = await startNodeGateway({
    config,
    env,
    secrets: {
      walletKey: wallets.gateway.privateKey,
      tokenSecret: randomBytes(32).toString("hex"),
      accountApiKeys: await accountApiKeys(config, env),
      accountWalletKeys: await accountWalletKeys(config, env),
    },
    logSink: (l) => logs.push(l),
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await signer?.stop();
  await emu?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("a wallet per upstream account", () => {
  it("a pinned tenant pays from its account's wallet, an unpinned one from the gateway's; ledger == chain per wallet", async () => {
    const before = await balances();
    const payeeBefore = await emu.chain!.balanceOf(emu.chain!.payee);
    // pinned-a's budget holds three searches: five at once are three payments from a's wallet, two refusals.
    const a = await Promise.all(Array.from({ length: 5 }, (_, i) => search(gw.url, keys["pinned-a"]!, { query: `a query ${i}` })));
    expect(a.map((r) => r.status).sort()).toEqual([200, 200, 200, 402, 402]);
    for (const r of a.filter((x) => x.status === 402)) expect((await r.json()).code).toBe("budget_exceeded");
    for (const i of [0, 1]) expect((await search(gw.url, keys["pinned-b"]!, { query: `b query ${i}` })).status).toBe(200);
    // c's wallet is in a remote signer: the gateway asks it to sign, holding no key.
    expect((await search(gw.url, keys["pinned-c"]!, { query: "c query" })).status).toBe(200);
    for (const i of [0, 1]) expect((await search(gw.url, keys.unpinned!, { query: `free query ${i}` })).status).toBe(200);
    const tenants = ["pinned-a", "pinned-b", "pinned-c", "unpinned"];
    // Commits land behind the answers.
    await until("every payment committed", async () => {
      const all = (await Promise.all(tenants.map(ledgerOf))).flat();
      return all.length === 8 && all.every((e) => e.state === "committed");
    });
    const ledgers = Object.fromEntries(await Promise.all(tenants.map(async (t) => [t, await ledgerOf(t)] as const)));
    for (const e of ledgers["pinned-a"]!) expect(e).toMatchObject({ payer: wallets.a.address, account: "a" });
    for (const e of ledgers["pinned-b"]!) expect(e).toMatchObject({ payer: wallets.b.address, account: "b" });
    for (const e of ledgers["pinned-c"]!) expect(e).toMatchObject({ payer: wallets.c.address, account: "c" });
    for (const e of ledgers.unpinned!) {
      expect(e.payer).toBe(wallets.gateway.address);
      expect(e.account).toBeUndefined();
    }
    const after = await balances();
    const byPayer = await committedByPayer(tenants);
    expect(before.a - after.a).toBe(3n * PRICE);
    expect(before.b - after.b).toBe(2n * PRICE);
    expect(before.gateway - after.gateway).toBe(2n * PRICE);
    expect(before.c - after.c).toBe(PRICE);
    for (const w of ["a", "b", "c", "gateway"] as const)
      expect(byPayer.get(wallets[w].address.toLowerCase()) ?? 0n).toBe(before[w] - after[w]);
    expect((await emu.chain!.balanceOf(emu.chain!.payee)) - payeeBefore).toBe(8n * PRICE);
    // The usage export names the account whose wallet paid.
    const exp = await (await fetch(`${gw.url}/_tollgate/admin/usage/export`, { headers: { "x-api-key": keys.ops! } })).json();
    const rows = exp.rows as Array<{ tenant: string; account: string; kind: string }>;
    expect(rows.find((r) => r.tenant === "pinned-a")?.account).toBe("a");
    expect(rows.find((r) => r.tenant === "pinned-b")?.account).toBe("b");
    expect(rows.find((r) => r.tenant === "unpinned")?.account).toBe("");
  }, 60_000);

  it("payments whose outcome was unknown are reconciled from the chain against each wallet's own authorizations", async () => {
    const before = await balances();
    proxy.state.stall = true;
    try {
      for (const t of ["pinned-a-2", "pinned-b"]) {
        const r = await search(gw.url, keys[t]!, { query: `lost answer for ${t}` });
        expect(r.status).toBe(504);
        expect((await r.json()).code).toBe("payment_outcome_unknown");
      }
    } finally {
      proxy.state.stall = false;
    }
    // The upstream settled both: the money left each account's wallet, the gateway could not know.
    await until("both settled on chain", async () => {
      const now = await balances();
      return before.a - now.a === PRICE && before.b - now.b === PRICE;
    });
    const held = [...(await ledgerOf("pinned-a-2")), ...(await ledgerOf("pinned-b"))].filter((e) => e.state === "uncertain");
    expect(held.map((e) => e.payer).sort()).toEqual([wallets.a.address, wallets.b.address].sort());
    // After validBefore (+ the reconciler's grace) the chain decides, each authorization read for its own payer.
    const wait = Math.max(...held.map((e) => Date.parse(e.validBefore!))) + 5_500 - Date.now();
    await new Promise((r) => setTimeout(r, Math.max(0, wait)));
    const report = await gw.gateway.reconciler.runOnce();
    expect(report.committed).toBe(2);
    expect(report.released).toBe(0);
    for (const e of held) {
      const [now] = (await ledgerOf(e.payer === wallets.a.address ? "pinned-a-2" : "pinned-b")).filter((x) => x.id === e.id);
      expect(now!.state).toBe("committed");
    }
    const after = await balances();
    expect(before.gateway).toBe(after.gateway); // nobody's payment landed on the gateway's wallet
    const byPayer = await committedByPayer(["pinned-a", "pinned-a-2"]);
    expect(byPayer.get(wallets.a.address.toLowerCase())).toBe(4n * PRICE); // three earlier, one now
    expect(before.a - after.a).toBe(PRICE);
    expect(before.b - after.b).toBe(PRICE);
  }, 60_000);

  it("readiness shows each account wallet's balance to operators (no address); each low one raises its own alert", async () => {
    const res = await fetch(`${gw.url}/_tollgate/ready`, { headers: { "x-api-key": keys.ops! } });
    const body = await res.json();
    const wallet = body.checks.wallet;
    const now = await balances();
    const usd = (n: bigint) => (Number(n) / 1e6).toFixed(6).replace(/0+$/, "").replace(/\.$/, "");
    expect(wallet).toMatchObject({ ok: true, floor: "0.10" });
    expect(Number(wallet.balance)).toBe(Number(usd(now.gateway)));
    expect(wallet.accounts.map((x: { account: string; ok: boolean }) => [x.account, x.ok])).toEqual([
      ["a", true],
      ["b", true],
      ["c", true],
    ]);
    expect(Number(wallet.accounts[0].balance)).toBe(Number(usd(now.a)));
    expect(Number(wallet.accounts[1].balance)).toBe(Number(usd(now.b)));
    // Like the gateway's, no wallet's address is in the answer (`tollgate wallet allowance --account` prints it).
    for (const w of Object.values(wallets)) expect(JSON.stringify(body).toLowerCase()).not.toContain(w.address.slice(2).toLowerCase());
    // wallet.low: each account wallet below the floor raises its own alert, naming the account (a: $0.98, b: $0.985);
    // c ($0.995) and the gateway's wallet ($0.99) are not below it.
    await gw.gateway.alerts.runOnce();
    const kv = gw.gateway.stores.kv;
    expect(await kv.get("alert:wallet.low:a")).toBeTruthy();
    expect(await kv.get("alert:wallet.low:b")).toBeTruthy();
    expect(await kv.get("alert:wallet.low:c")).toBeFalsy();
    expect(await kv.get("alert:wallet.low")).toBeFalsy();
    const anonymous = await (await fetch(`${gw.url}/_tollgate/ready`)).json();
    expect(anonymous.checks.wallet).toEqual({ ok: true });
    // No wallet key in any answer or log line.
    const text = JSON.stringify(body) + logs.join("\n");
    for (const w of Object.values(wallets)) expect(text).not.toContain(w.privateKey.slice(2));
  });

  it("the console's overview shows each account's own wallet to admins", async () => {
    const login = await fetch(`${gw.url}/_tollgate/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: keys.ops! }),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const html = await (await fetch(`${gw.url}/_tollgate/console/`, { headers: { cookie } })).text();
    for (const a of ["a", "b", "c"] as const) {
      const row = html.match(new RegExp(`<tr data-account="${a}">(.*?)</tr>`))?.[1] ?? "";
      expect(row).toContain(wallets[a].address);
    }
    expect(html).not.toContain(wallets.gateway.privateKey.slice(2));
  });

  it("tollgate wallet allowance --account reads the account's wallet; an unknown account is named", async () => {
    const cli = (args: string[], env: Record<string, string> = {}) =>
      run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "wallet", ...args], {
        env: { ...process.env, TOLLGATE_WALLET_KEY: wallets.gateway.privateKey, ...env },
        timeout: 60_000,
      });
    const common = ["--network", network, "--asset", asset, "--rpc", rpcUrl, "--config", files.config];
    const b = await cli(["allowance", ...common, "--account", "b"]);
    expect(b.stdout).toContain(`${wallets.b.address} allows Permit2`);
    const a = await cli(["allowance", ...common, "--account", "a"], { TEST_WALLET_KEY_A: wallets.a.privateKey });
    expect(a.stdout).toContain(`${wallets.a.address} allows Permit2`);
    const missing = await cli(["allowance", ...common, "--account", "a"]).catch((err: { stderr: string }) => err);
    expect((missing as { stderr: string }).stderr).toContain(
      "upstream.accounts[0].walletKeyEnv: the environment variable TEST_WALLET_KEY_A is not set",
    );
    const unknown = await cli(["allowance", ...common, "--account", "zz"]).catch((err: { stderr: string }) => err);
    expect((unknown as { stderr: string }).stderr).toContain('no upstream account "zz"');
    expect((unknown as { stderr: string }).stderr).toContain("expected one of a, b");
  }, 60_000);
});

describe("account wallet configuration", () => {
  const base = (accounts: unknown[]) => ({ upstream: { baseUrl: "https://api.example.test", accounts }, tenants: [] });

  it("names the account's field: both sources, a variable not set, a malformed key", () => {
    let err = (() => {
      try {
        parseConfig(
          base([
            { id: "a", apiKeyEnv: "K_A" },
            { id: "b", apiKeyEnv: "K_B", walletKeyEnv: "W_B", walletKeyFile: "/x" },
          ]),
        );
      } catch (e) {
        return e;
      }
    })() as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.problems.join("\n")).toContain("upstream.accounts[1].walletKeyEnv");
    err = (() => {
      try {
        parseConfig(base([{ id: "a", apiKeyEnv: "K_A", walletKeyFile: "/x", walletSigner: { socket: "/run/s.sock" } }]));
      } catch (e) {
        return e;
      }
    })() as ConfigError;
    expect(err.problems.join("\n")).toContain("upstream.accounts[0].walletKeyEnv: expected at most one of");
    const config = parseConfig(
      base([
        { id: "a", apiKeyEnv: "K_A" },
        { id: "b", apiKeyEnv: "K_B", walletKeyEnv: "W_B" },
      ]),
    );
    expect(accountWalletKeysFromEnv(parseConfig(base([{ id: "a", apiKeyEnv: "K_A" }])), {})).toBeUndefined();
    const secret = `0x${randomBytes(32).toString("hex")}`;
    expect(accountWalletKeysFromEnv(config, { W_B: secret })).toEqual({ b: secret });
    for (const [env, says] of [
      [{}, 'upstream.accounts[1].walletKeyEnv: the environment variable W_B (account "b") is not set'],
      [{ W_B: "0x1234" }, 'upstream.accounts[1].walletKeyEnv: expected 0x followed by 64 hex characters (account "b")'],
    ] as const) {
      err = (() => {
        try {
          accountWalletKeysFromEnv(config, env);
        } catch (e) {
          return e;
        }
      })() as ConfigError;
      expect(err.problems).toEqual([says]);
    }
  });
});

describe("an account wallet in a remote signer", () => {
  it("a signer that does not answer at start is named by the account's field, and nothing starts", async () => {
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0 },
      upstream: {
        baseUrl: "https://api.example.test",
        accounts: [
          { id: "eu", apiKeyEnv: "K_EU", walletSigner: { socket: join(tmpdir(), `tg-no-signer-${randomBytes(6).toString("hex")}.sock`) } },
        ],
      },
      tenants: [],
    });
    const err = await startNodeGateway({ config, env: {}, secrets: { accountApiKeys: { eu: "k" } } }).then(
      (g) => (void g.close(), undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]).toMatch(/^upstream\.accounts\[0\]\.walletSigner\.socket: no signer answers at /);
  });
});

describe("account keys re-read on rotation", () => {
  it("rotating one account's key file while the SDK runs: no request fails, no restart", async () => {
    const hb = new Hyperbrowser({ apiKey: keys["pinned-a-2"]!, baseUrl: gw.url });
    const profile = await hb.profiles.create({ name: "rotation" });
    const oldKey = emu.accounts.get("a")!.apiKey;
    const newKey = `emu_a_rotated_${randomBytes(12).toString("base64url")}`;
    const carried = (key: string) => emu.received.filter((r) => r.headers["x-api-key"] === key).length;
    let stop = false;
    let sent = 0;
    const failures: unknown[] = [];
    const worker = async (w: number) => {
      for (let i = 0; !stop && i < 2000; i++) {
        try {
          if (i % 10 === 9) await hb.profiles.create({ name: `rotation-${w}-${i}` });
          else expect((await hb.profiles.get(profile.id)).id).toBe(profile.id);
        } catch (err) {
          failures.push(err);
        }
        sent++;
      }
    };
    const workers = Array.from({ length: 4 }, (_, w) => worker(w));
    try {
      await until("traffic", () => sent > 30);
      // The operator's rotation: the account takes both keys, the file gets the new one, the old one is revoked once
      // the gateway uses the new one.
      emu.accounts.addKey("a", newKey);
      await swap(files.keyA, `${newKey}\n`);
      await until("the new key in use", () => carried(newKey) > 20);
      const oldCalls = carried(oldKey);
      await new Promise((r) => setTimeout(r, 100));
      emu.accounts.revokeKey("a", oldKey);
      const before = sent;
      await until("traffic on the new key alone", () => sent > before + 60);
      stop = true;
      await Promise.all(workers);
      expect(failures).toEqual([]);
      expect(oldCalls).toBeGreaterThan(0);
      expect(carried(oldKey)).toBeLessThanOrEqual(oldCalls + 4); // at most the calls already on their way
      console.log(
        `account key rotated under load: ${sent} SDK calls, none failed; ${oldCalls} on the old key, ${carried(newKey)} on the new`,
      );
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    const joined = logs.join("\n");
    expect(joined).toContain("accountApiKey:a");
    expect(joined).not.toContain(newKey);
    expect(joined).not.toContain(oldKey);
  }, 60_000);
});
