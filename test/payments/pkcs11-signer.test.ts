// The wallet key in an HSM token (SoftHSM2, a real PKCS#11 module): a secp256k1 pair made inside the token by
// `tollgate signer keygen` (the test never sees the private key, nor does anything on this machine outside the token),
// signatures from the token normalised to low s with the recovery id found, and a paid search signed inside the token
// by a gateway running as its own process with no TOLLGATE_WALLET_KEY in its environment, settled on the local chain
// by the x402 facilitator: the ledger equals the chain to the atomic unit.
import { execFile, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  erc20Abi,
  http,
  recoverTypedDataAddress,
  type TypedDataDefinition,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import type { EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { openPkcs11Signer, ethereumSignature } from "../../src/host/node/pkcs11-signer.js";
import type { WalletSigner } from "../../src/payments/wallet-signer.js";
import { startEmulatorWithChain, search } from "../helpers/paid-stack.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { startNodeGateway } from "../../src/host/node.js";
import { openRemoteSigner } from "../../src/host/node/remote-signer.js";

const run = promisify(execFile);
const MODULE = "/usr/lib/softhsm/libsofthsm2.so";
const TOKEN = "tollgate-test";
const PIN = randomBytes(6).toString("hex");
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

let dir: string;
/** The environment that finds the test's own token directory (never the machine's). */
let hsmEnv: Record<string, string>;
let address: `0x${string}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tg-hsm-"));
  await writeFile(join(dir, "softhsm2.conf"), `directories.tokendir = ${dir}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  hsmEnv = { SOFTHSM2_CONF: join(dir, "softhsm2.conf") };
  execFileSync("softhsm2-util", ["--init-token", "--free", "--label", TOKEN, "--so-pin", `so${PIN}`, "--pin", PIN], {
    env: { ...process.env, ...hsmEnv },
    stdio: "ignore",
  });
  process.env.SOFTHSM2_CONF = hsmEnv.SOFTHSM2_CONF; // this process opens the token too (the signer's own tests)
  // The key is made inside the token by the CLI; only its address comes out.
  const { stdout } = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "signer", "keygen", "--token", TOKEN], {
    env: { ...process.env, ...hsmEnv, TOLLGATE_PKCS11_PIN: PIN },
    timeout: 60_000,
  });
  address = /address (0x[0-9a-fA-F]{40})/.exec(stdout)![1] as `0x${string}`;
  expect(stdout).toContain('signer = "pkcs11"');
}, 90_000);
afterAll(async () => {
  delete process.env.SOFTHSM2_CONF;
  await rm(dir, { recursive: true, force: true });
});

const typedData = (i: number) => ({
  domain: { name: "USD Coin", version: "2", chainId: 31337, verifyingContract: "0x00000000000000000000000000000000000000aa" },
  types: {
    Payment: [
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "nonce", type: "bytes32" },
    ],
  },
  primaryType: "Payment",
  message: { to: "0x00000000000000000000000000000000000000bb", value: BigInt(i), nonce: `0x${randomBytes(32).toString("hex")}` },
});

describe("the PKCS#11 signer (SoftHSM2)", () => {
  let signer: WalletSigner;
  beforeAll(() => {
    signer = openPkcs11Signer({ module: MODULE, tokenLabel: TOKEN, keyLabel: "tollgate-wallet" }, PIN);
  });
  afterAll(async () => {
    await signer?.close?.();
  });

  it("derives the address the CLI printed from the token's public point", () => {
    expect(signer).toMatchObject({ kind: "pkcs11", address });
  });

  it("signs 40 typed-data messages concurrently: each recovers to the address, every s in the lower half", async () => {
    const data = Array.from({ length: 40 }, (_, i) => typedData(i));
    const sigs = await Promise.all(data.map((d) => signer.signTypedData(d)));
    for (const [i, sig] of sigs.entries()) {
      expect(sig).toMatch(/^0x[0-9a-f]{130}$/);
      expect(BigInt(`0x${sig.slice(66, 130)}`) <= N >> 1n, `signature ${i}`).toBe(true);
      expect(["1b", "1c"]).toContain(sig.slice(130));
      expect(await recoverTypedDataAddress({ ...(data[i] as unknown as TypedDataDefinition), signature: sig })).toBe(address);
    }
  });

  it("normalises a high s and finds the recovery id (the other half of the curve gives the same key)", async () => {
    const local = privateKeyToAccount(`0x${randomBytes(32).toString("hex")}`);
    const hash = `0x${randomBytes(32).toString("hex")}` as const;
    const good = await local.sign({ hash });
    const r = Buffer.from(good.slice(2, 66), "hex");
    const high = (N - BigInt(`0x${good.slice(66, 130)}`)).toString(16).padStart(64, "0");
    const sig = await ethereumSignature(hash, Buffer.concat([r, Buffer.from(high, "hex")]), local.address);
    expect(sig).toBe(good);
    await expect(ethereumSignature(hash, Buffer.alloc(64, 1), local.address)).rejects.toThrow(/recovers to neither/);
  });

  it("names what is wrong: a bad PIN, an unknown token or key label, a missing PIN", async () => {
    const opts = { module: MODULE, tokenLabel: TOKEN, keyLabel: "tollgate-wallet" };
    await signer.close?.(); // the token's login is the process's: a bad PIN is only seen with no signer open
    expect(() => openPkcs11Signer(opts, "000000")).toThrow(/TOLLGATE_PKCS11_PIN: the token refused the login \(CKR_PIN_INCORRECT\)/);
    expect(() => openPkcs11Signer({ ...opts, tokenLabel: "nope" }, PIN)).toThrow(/wallet\.pkcs11\.tokenLabel: no token labelled "nope"/);
    expect(() => openPkcs11Signer({ ...opts, keyLabel: "nope" }, PIN)).toThrow(/wallet\.pkcs11\.keyLabel: no EC key pair labelled "nope"/);
    expect(() => openPkcs11Signer(opts, undefined)).toThrow(/TOLLGATE_PKCS11_PIN: required/);
    signer = openPkcs11Signer(opts, PIN);
    expect(signer.address).toBe(address);
    await expect(signer.signTypedData(typedData(1))).resolves.toMatch(/^0x/);
  });

  it("refuses to make a second key pair under a label in use (never overwrites the wallet)", async () => {
    const again = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "signer", "keygen", "--token", TOKEN], {
      env: { ...process.env, ...hsmEnv, TOLLGATE_PKCS11_PIN: PIN },
      timeout: 60_000,
    }).catch((e) => e);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('a key pair labelled "tollgate-wallet" exists');
  }, 60_000);
});

describe("the out-of-process signer holding the PKCS#11 session", () => {
  it("serves the token's address and signs an EIP-3009 authorization within its limits, refusing one above", async () => {
    const socket = join(dir, "serve.sock");
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "src/cli/index.ts",
        "signer",
        "serve",
        "--socket",
        socket,
        "--state",
        join(dir, "serve-state.json"),
        "--networks",
        "eip155:31337",
        "--assets",
        "0x00000000000000000000000000000000000000aa",
        "--max-per-authorization",
        "0.01",
        "--max-per-day",
        "1.00",
        "--pkcs11-token",
        TOKEN,
      ],
      { env: { ...process.env, ...hsmEnv, TOLLGATE_PKCS11_PIN: PIN }, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    const exited = new Promise((r) => child.once("exit", r));
    try {
      for (let i = 0; i < 300 && !out.includes("listening"); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain(`for ${address} (pkcs11)`);
      const remote = await openRemoteSigner(socket);
      expect(remote).toMatchObject({ kind: "remote", address });
      const auth = (value: bigint) => ({
        domain: { name: "USD Coin", version: "2", chainId: 31337, verifyingContract: "0x00000000000000000000000000000000000000aa" },
        types: {
          TransferWithAuthorization: [
            { name: "from", type: "address" },
            { name: "to", type: "address" },
            { name: "value", type: "uint256" },
            { name: "validAfter", type: "uint256" },
            { name: "validBefore", type: "uint256" },
            { name: "nonce", type: "bytes32" },
          ],
        },
        primaryType: "TransferWithAuthorization",
        message: {
          from: address,
          to: "0x00000000000000000000000000000000000000bb",
          value,
          validAfter: 0n,
          validBefore: BigInt(Math.floor(Date.now() / 1000) + 120),
          nonce: `0x${randomBytes(32).toString("hex")}`,
        },
      });
      const ok = auth(5000n);
      const signature = await remote.signTypedData(ok);
      expect(await recoverTypedDataAddress({ ...(ok as unknown as TypedDataDefinition), signature })).toBe(address);
      await expect(remote.signTypedData(auth(20_000n))).rejects.toMatchObject({ status: 402, code: "signer_refused" });
    } finally {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {}
      await exited;
    }
  }, 60_000);
});

describe("a paid search signed inside the token, settled on the local chain", () => {
  let emu: EmulatorHandle;
  let gw: GatewayProcess;
  const keys = { acme: generateTenantKey() };

  beforeAll(async () => {
    emu = await startEmulatorWithChain();
    const chain = emu.chain!;
    // Fund the token's address with 10 USDC: minted to a throwaway wallet, given gas on anvil, sent over.
    const funder = await chain.createFundedWallet(10_000_000n);
    const transport = http(chain.rpcUrl);
    const local = { ...foundry, id: chain.chainId };
    await createTestClient({ mode: "anvil", chain: local, transport }).setBalance({ address: funder.address, value: 10n ** 18n });
    const wallet = createWalletClient({ account: privateKeyToAccount(funder.privateKey), chain: local, transport });
    const tx = await wallet.writeContract({
      address: chain.token.address,
      abi: erc20Abi,
      functionName: "transfer",
      args: [address, 10_000_000n],
    });
    await createPublicClient({ chain: local, transport }).waitForTransactionReceipt({ hash: tx });
    expect(await chain.balanceOf(address)).toBe(10_000_000n);

    gw = await startGatewayProcess(
      {
        server: { host: "127.0.0.1", port: 0, publicHosts: ["127.0.0.1"] },
        upstream: { baseUrl: emu.controlUrl },
        payments: {
          networks: [chain.network],
          assets: [chain.token.address],
          maxPerRequest: "0.50",
          rpc: { [chain.network]: chain.rpcUrl },
        },
        wallet: { signer: "pkcs11", pkcs11: { module: MODULE, tokenLabel: TOKEN } },
        tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(keys.acme) }], budget: { daily: "1.00" } }],
      },
      {
        ...hsmEnv,
        TOLLGATE_PKCS11_PIN: PIN,
        TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
        TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
      },
    );
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
    await emu?.close();
  });

  it("holds no wallet key: its environment has no TOLLGATE_WALLET_KEY, only the token's PIN", async () => {
    const env = (await readFile(`/proc/${gw.pid}/environ`, "utf8")).split("\0");
    expect(env.some((v) => v.startsWith("TOLLGATE_WALLET_KEY="))).toBe(false);
    expect(env).toContain(`TOLLGATE_PKCS11_PIN=${PIN}`);
    const ready = await (await fetch(`${gw.url}/_tollgate/ready`)).json();
    expect(ready.checks.signer).toMatchObject({ ok: true, present: true });
  });

  it("pays a search with a signature made in the token: the ledger equals the chain to the atomic unit", async () => {
    const chain = emu.chain!;
    const before = await chain.balanceOf(address);
    const payeeBefore = await chain.balanceOf(chain.payee);
    for (const query of ["hsm one", "hsm two"]) {
      const r = await search(gw.url, keys.acme, { query });
      expect(r.status, await r.clone().text()).toBe(200);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
    }
    const ledger = await (await fetch(`${gw.url}/_tollgate/ledger`, { headers: { "x-api-key": keys.acme } })).json();
    const committed = ledger.entries.filter((e: { state: string }) => e.state === "committed");
    expect(committed).toHaveLength(2);
    for (const e of committed) {
      expect(e).toMatchObject({ payer: address, payee: chain.payee, network: chain.network, amount: "5000" });
      expect(e.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await chain.authorizationState(address, e.nonce)).toBe(true);
    }
    const total = committed.reduce((a: bigint, x: { amount: string }) => a + BigInt(x.amount), 0n);
    expect(before - (await chain.balanceOf(address))).toBe(total);
    expect((await chain.balanceOf(chain.payee)) - payeeBefore).toBe(total);
    // Nothing of the PIN in the gateway's output.
    expect(gw.output()).not.toContain(PIN);
  }, 60_000);
});

describe("choosing the signer in config", () => {
  const base = { server: { port: 0 }, upstream: { baseUrl: "http://127.0.0.1:9" } };
  const problems = (wallet: unknown) => {
    try {
      parseConfig({ ...base, wallet });
      return [];
    } catch (err) {
      return (err as { problems: string[] }).problems;
    }
  };

  it('refuses "pkcs11" or "remote" without its section, and an unknown signer, naming the field', () => {
    expect(problems({ signer: "remote" })).toEqual([expect.stringMatching(/^wallet\.remote: required when wallet\.signer is "remote"/)]);
    expect(problems({ signer: "pkcs11" })).toEqual([expect.stringMatching(/^wallet\.pkcs11: required when wallet\.signer is "pkcs11"/)]);
    expect(problems({ signer: "hsm" })).toEqual([expect.stringMatching(/^wallet\.signer: expected "local", "pkcs11" or "remote"/)]);
    expect(problems({ signer: "remote", remote: { socket: "/run/s.sock" } })).toEqual([]);
    expect(problems({ signer: "pkcs11", pkcs11: { tokenLabel: "t" } })).toEqual([]);
  });

  it("refuses a PKCS#11 signer with TOLLGATE_WALLET_KEY also set, and one a runtime cannot open (Workers)", async () => {
    const config = parseConfig({ ...base, wallet: { signer: "pkcs11", pkcs11: { tokenLabel: TOKEN } } });
    const secrets = { walletKey: `0x${"1".repeat(64)}` as const, pkcs11Pin: PIN, tokenSecret: "s".repeat(40) };
    await expect(startNodeGateway({ config, secrets })).rejects.toThrow(/TOLLGATE_WALLET_KEY: set, but wallet\.signer is "pkcs11"/);
    expect(() => createGateway(config, { secrets: { tokenSecret: "s".repeat(40) } })).toThrow(
      /wallet\.signer: "pkcs11" is opened by the Node entry/,
    );
  });
});
