// The out-of-process signer (`tollgate signer serve`, its own process on a Unix socket) and a gateway (its own process,
// `[wallet] signer = "remote"`) that holds no key material: the signer's own limits refuse payments the gateway's policy
// would allow (per authorization, per day, a payee it does not know) and the gateway answers 402 signer_refused with
// nothing paid; a killed signer fails closed (503 signer_unavailable); a restarted one resumes, its day's count too.
// The ledger equals the chain at the end.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { limitRefusal, readAuthorization, type SignerLimits } from "../../src/payments/signer-limits.js";
import { search, startEmulatorWithChain } from "../helpers/paid-stack.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";

let emu: EmulatorHandle;
let gw: GatewayProcess;
let dir: string;
let wallet: { address: `0x${string}`; privateKey: `0x${string}` };
const keys = { acme: generateTenantKey() };
const OTHER = "0x000000000000000000000000000000000000dEaD";

interface SignerProcess {
  child: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}
let signer: SignerProcess | undefined;

/** Starts `tollgate signer serve` with these limits (same socket, same state file every time). */
async function startSigner(limits: { perAuthorization: string; perDay: string; payees?: string }): Promise<SignerProcess> {
  const chain = emu.chain!;
  const args = [
    "--import",
    "tsx",
    "src/cli/index.ts",
    "signer",
    "serve",
    "--socket",
    join(dir, "signer.sock"),
    "--state",
    join(dir, "signer-state.json"),
    "--networks",
    chain.network,
    "--assets",
    chain.token.address,
    "--payees",
    limits.payees ?? chain.payee,
    "--max-per-authorization",
    limits.perAuthorization,
    "--max-per-day",
    limits.perDay,
  ];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, TOLLGATE_SIGNER_KEY: wallet.privateKey },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signer did not start:\n${out}`)), 30_000);
    const check = () => {
      if (out.includes("tollgate signer listening")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stderr!.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`signer exited with ${code}:\n${out}`));
    });
  });
  return {
    child,
    output: () => out,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      try {
        process.kill(-child.pid!, signal);
      } catch {}
      await exited;
    },
  };
}

async function restartSigner(limits: Parameters<typeof startSigner>[0]) {
  await signer?.stop();
  signer = await startSigner(limits);
}

/** Whether any readable mapping of process `pid` holds one of `needles` (read through /proc/<pid>/mem, as root). */
async function memoryHolds(pid: number, needles: Buffer[]): Promise<boolean> {
  const maps = (await readFile(`/proc/${pid}/maps`, "utf8")).trim().split("\n");
  const fd = await open(`/proc/${pid}/mem`, "r");
  const overlap = Math.max(...needles.map((n) => n.length));
  const chunk = Buffer.alloc(8 * 1024 * 1024);
  try {
    for (const line of maps) {
      const [range, perms, , , , name] = line.split(/\s+/);
      if (!perms!.startsWith("r") || name === "[vvar]" || name === "[vsyscall]" || name === "[vvar_vclock]") continue;
      const [start, end] = range!.split("-").map((h) => Number.parseInt(h, 16)) as [number, number];
      for (let at = start; at < end; at += chunk.length - overlap) {
        const len = Math.min(chunk.length, end - at);
        let got = 0;
        try {
          got = (await fd.read(chunk, 0, len, at)).bytesRead;
        } catch {
          break; // a mapping the kernel will not read (guard pages)
        }
        const view = chunk.subarray(0, got);
        if (needles.some((n) => view.includes(n))) return true;
        if (got < len) break;
      }
    }
    return false;
  } finally {
    await fd.close();
  }
}

const ledger = async () =>
  (await (await fetch(`${gw.url}/_tollgate/ledger`, { headers: { "x-api-key": keys.acme } })).json()).entries as Array<{
    state: string;
    amount: string;
    payer?: string;
    reason?: string;
  }>;
const committedTotal = async () => (await ledger()).filter((e) => e.state === "committed").reduce((a, e) => a + BigInt(e.amount), 0n);
let queries = 0;
const paidSearch = () => search(gw.url, keys.acme, { query: `remote signer ${++queries}` });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tg-signer-"));
  emu = await startEmulatorWithChain();
  const chain = emu.chain!;
  wallet = await chain.createFundedWallet(10_000_000n);
  signer = await startSigner({ perAuthorization: "0.004", perDay: "1.00" });
  gw = await startGatewayProcess(
    {
      server: { host: "127.0.0.1", port: 0, publicHosts: ["127.0.0.1"] },
      upstream: { baseUrl: emu.controlUrl },
      payments: { networks: [chain.network], assets: [chain.token.address], maxPerRequest: "0.50", rpc: { [chain.network]: chain.rpcUrl } },
      wallet: { signer: "remote", remote: { socket: join(dir, "signer.sock") } },
      tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(keys.acme) }], budget: { daily: "1.00" } }],
    },
    { TOLLGATE_UPSTREAM_API_KEY: emu.apiKey, TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex") },
  );
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  await signer?.stop();
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("a gateway with the remote signer", () => {
  it("holds no key material: no wallet or signer key in its environment", async () => {
    const env = (await readFile(`/proc/${gw.pid}/environ`, "utf8")).split("\0");
    expect(env.some((v) => /^TOLLGATE_(WALLET|SIGNER)_KEY=/.test(v))).toBe(false);
    expect(env.join("\n")).not.toContain(wallet.privateKey.slice(2));
    expect((await (await fetch(`${gw.url}/_tollgate/ready`)).json()).checks.signer).toMatchObject({ ok: true, present: true });
  });

  it("is refused by the signer's most per authorization though its own policy allows it: 402, nothing paid", async () => {
    const before = await emu.chain!.balanceOf(wallet.address);
    const r = await paidSearch();
    expect(r.status).toBe(402);
    const body = await r.json();
    expect(body).toMatchObject({ code: "signer_refused" });
    expect(body.message).toMatch(/5000 is above the most per authorization \(4000\)/);
    expect(await emu.chain!.balanceOf(wallet.address)).toBe(before);
    expect(await committedTotal()).toBe(0n);
    expect((await ledger()).every((e) => e.state === "released")).toBe(true);
  });

  it("pays within the signer's limits, then is refused past its most per day", async () => {
    await restartSigner({ perAuthorization: "0.01", perDay: "0.012" });
    expect((await paidSearch()).status).toBe(200);
    expect((await paidSearch()).status).toBe(200);
    const third = await paidSearch();
    expect(third.status).toBe(402);
    expect((await third.json()).message).toMatch(/above the most per day \(12000\)/);
    expect(await committedTotal()).toBe(10_000n);
  }, 60_000);

  it("is refused a payee the signer does not allow", async () => {
    await restartSigner({ perAuthorization: "0.01", perDay: "1.00", payees: OTHER });
    const r = await paidSearch();
    expect(r.status).toBe(402);
    expect((await r.json()).message).toMatch(/payee 0x[0-9a-f]{40} is not allowed/);
    expect(await committedTotal()).toBe(10_000n);
  }, 60_000);

  it("fails closed when the signer is killed (503, nothing paid), and resumes when it is back, its day's count kept", async () => {
    await restartSigner({ perAuthorization: "0.01", perDay: "0.012" });
    await signer!.stop("SIGKILL");
    const down = await paidSearch();
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ code: "signer_unavailable" });
    expect(await committedTotal()).toBe(10_000n);
    // Back with the same state file: today's 0.010 is still counted, so 0.012 a day allows no third search...
    signer = await startSigner({ perAuthorization: "0.01", perDay: "0.012" });
    const still = await paidSearch();
    expect(still.status).toBe(402);
    expect((await still.json()).message).toMatch(/today's signed total to 15000/);
    // ...and a higher one does.
    await restartSigner({ perAuthorization: "0.01", perDay: "0.02" });
    expect((await paidSearch()).status).toBe(200);
  }, 60_000);

  it("holds the key nowhere in its memory after paying (hex or raw bytes), where the signer's process does", async () => {
    const hex = wallet.privateKey.slice(2);
    const needles = [Buffer.from(hex, "latin1"), Buffer.from(hex.toUpperCase(), "latin1"), Buffer.from(hex, "hex")];
    // The scan finds the key where it is (the signer holds it): the check below is not vacuous.
    expect(await memoryHolds(signer!.child.pid!, needles)).toBe(true);
    expect(await memoryHolds(gw.pid, needles)).toBe(false);
  }, 120_000);

  it("keeps the ledger equal to the chain: the wallet's balance fell by exactly the committed total", async () => {
    const entries = await ledger();
    const committed = entries.filter((e) => e.state === "committed");
    expect(committed).toHaveLength(3);
    for (const e of committed) expect(e.payer).toBe(wallet.address);
    expect(10_000_000n - (await emu.chain!.balanceOf(wallet.address))).toBe(await committedTotal());
    expect(await committedTotal()).toBe(15_000n);
    // Every refusal released its hold.
    expect(entries.filter((e) => e.state !== "committed").every((e) => e.state === "released")).toBe(true);
    expect(gw.output()).not.toContain(wallet.privateKey.slice(2));
    expect(signer!.output()).not.toContain(wallet.privateKey.slice(2));
  });
});

describe("the signer's limits (pure)", () => {
  const limits: SignerLimits = {
    chainIds: [84532],
    assets: ["0x00000000000000000000000000000000000000aa"],
    payees: [],
    maxPerAuthorization: 10_000n,
    maxPerDay: 50_000n,
    maxLifetimeSeconds: 600,
  };
  const from = "0x00000000000000000000000000000000000000f0";
  const typed = (over: Record<string, unknown> = {}, primaryType = "TransferWithAuthorization") => ({
    domain: { name: "USDC", version: "2", chainId: 84532, verifyingContract: "0x00000000000000000000000000000000000000AA" },
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
    primaryType,
    message: { from, to: OTHER, value: 5000n, validAfter: 0n, validBefore: 1_000_300n, nonce: `0x${"1".repeat(64)}`, ...over },
  });

  it("reads an EIP-3009 authorization, and refuses anything else it is asked to sign", () => {
    expect(readAuthorization(typed())).toMatchObject({ chainId: 84532, asset: limits.assets[0], value: 5000n, to: OTHER.toLowerCase() });
    expect(readAuthorization(typed({}, "PermitTransferFrom"))).toMatchObject({ refused: expect.stringMatching(/only EIP-3009/) });
    expect(readAuthorization({ ...typed(), types: { TransferWithAuthorization: [] } })).toMatchObject({
      refused: expect.stringMatching(/not EIP-3009's/),
    });
    expect(readAuthorization(typed({ value: "lots" }))).toMatchObject({ refused: "the authorization is malformed" });
  });

  // A Permit2 witness transfer as @x402/evm asks for one (exact over Permit2; upto adds witness.facilitator).
  const permit2 = (over: { spender?: string; verifyingContract?: string; facilitator?: boolean } = {}) => ({
    domain: { name: "Permit2", chainId: 84532, verifyingContract: over.verifyingContract ?? "0x000000000022D473030F116dDEE9F6B43aC78BA3" },
    types: {
      PermitWitnessTransferFrom: [
        { name: "permitted", type: "TokenPermissions" },
        { name: "spender", type: "address" },
        { name: "nonce", type: "uint256" },
        { name: "deadline", type: "uint256" },
        { name: "witness", type: "Witness" },
      ],
      TokenPermissions: [
        { name: "token", type: "address" },
        { name: "amount", type: "uint256" },
      ],
      Witness: over.facilitator
        ? [
            { name: "to", type: "address" },
            { name: "facilitator", type: "address" },
            { name: "validAfter", type: "uint256" },
          ]
        : [
            { name: "to", type: "address" },
            { name: "validAfter", type: "uint256" },
          ],
    },
    primaryType: "PermitWitnessTransferFrom",
    message: {
      permitted: { token: "0x00000000000000000000000000000000000000AA", amount: 20_000n },
      spender:
        over.spender ?? (over.facilitator ? "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002" : "0x402085c248EeA27D92E8b30b2C58ed07f9E20001"),
      nonce: 12345n,
      deadline: 1_000_300n,
      witness: { to: OTHER, validAfter: 0n, ...(over.facilitator ? { facilitator: OTHER } : {}) },
    },
  });

  it("reads a Permit2 witness transfer to x402's proxies (exact over Permit2, upto's maximum) under the same limits", () => {
    for (const facilitator of [false, true]) {
      const a = readAuthorization(permit2({ facilitator }), from);
      expect(a).toMatchObject({
        chainId: 84532,
        asset: limits.assets[0],
        from,
        to: OTHER.toLowerCase(),
        value: 20_000n,
        validBefore: 1_000_300,
      });
      // 20,000 is above the most per authorization (10,000): refused, as an EIP-3009 one would be.
      expect(limitRefusal(a as Exclude<typeof a, { refused: string }>, from, limits, 0n, 1_000_000)).toMatch(/most per authorization/);
    }
    // Any other spender could pull the tokens anywhere: refused; so is a domain that is not Permit2's.
    expect(readAuthorization(permit2({ spender: OTHER }), from)).toMatchObject({
      refused: expect.stringMatching(/spender is not one of x402/),
    });
    expect(readAuthorization(permit2({ verifyingContract: OTHER }), from)).toMatchObject({
      refused: expect.stringMatching(/not for Permit2/),
    });
    expect(readAuthorization({ ...permit2(), types: { ...permit2().types, Witness: [] } }, from)).toMatchObject({
      refused: expect.stringMatching(/not x402's/),
    });
  });

  it("refuses on network, asset, payee, amount, lifetime, day and wallet, each named", () => {
    const a = readAuthorization(typed()) as Exclude<ReturnType<typeof readAuthorization>, { refused: string }>;
    const now = 1_000_000;
    expect(limitRefusal(a, from, limits, 0n, now)).toBeUndefined();
    expect(limitRefusal({ ...a, chainId: 1 }, from, limits, 0n, now)).toMatch(/network eip155:1 is not allowed/);
    expect(limitRefusal({ ...a, asset: "0xbb" }, from, limits, 0n, now)).toMatch(/asset 0xbb is not allowed/);
    expect(limitRefusal(a, from, { ...limits, payees: ["0x01"] }, 0n, now)).toMatch(/payee .* is not allowed/);
    expect(limitRefusal({ ...a, value: 10_001n }, from, limits, 0n, now)).toMatch(/most per authorization/);
    expect(limitRefusal({ ...a, validBefore: now + 601 }, from, limits, 0n, now)).toMatch(/lives 601 s/);
    expect(limitRefusal(a, from, limits, 45_001n, now)).toMatch(/most per day/);
    expect(limitRefusal(a, OTHER, limits, 0n, now)).toMatch(/not from this signer's wallet/);
  });
});
