// Every x402 scheme the upstream may ask for, paid by the gateway against the emulator on the local chain through the
// x402 library's facilitator: exact over EIP-3009, exact over Permit2 (after `tollgate wallet approve`), upto (the
// ledger settles to what the seller settled), the payment-identifier extension on a resent payment (deduplicated),
// settlement_pending (held, then resolved from the chain), and offers nobody here can pay. Ledger == chain after each.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { search, startPaidGateway } from "../helpers/paid-stack.js";

const run = promisify(execFile);
const SEARCH = "/x402/web/search";
const PRICE = 5000n; // the emulator's search price: $0.005

const ledgerOf = async (url: string, key: string) =>
  (await (await fetch(`${url}/_tollgate/ledger?limit=1000`, { headers: { "x-api-key": key } })).json()).entries as Array<
    Record<string, string>
  >;

/** `tollgate wallet …` as an operator runs it (the CLI from source), with the wallet's key in the environment. */
const walletCli = (args: string[], key?: string) =>
  run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "wallet", ...args], {
    env: { ...process.env, TOLLGATE_WALLET_KEY: key ?? "" },
    timeout: 60_000,
  });

/** Gas for the wallet's own transaction (the approval): the local chain's faucet. */
const giveGas = (rpcUrl: string, address: string) =>
  fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_setBalance", params: [address, "0x8ac7230489e80000"] }),
  });

describe("every x402 scheme the upstream may ask for (emulator + local chain + library facilitator)", () => {
  let emu: EmulatorHandle;
  const events: Array<{ event: string; fields?: Record<string, unknown> }> = [];
  beforeAll(async () => {
    emu = await startEmulator({ modules: ["x402"], log: (event, fields) => events.push({ event, fields }) });
  });
  afterAll(async () => {
    await emu?.close();
  });
  const demand = () => emu.x402!;
  const reset = () => {
    demand().schemes = {};
    demand().uptoSettlePercent = 60;
    demand().settlementPending = false;
    demand().dropAnswers = 0;
  };

  /** What left the wallet on chain equals what the ledger committed; the payee got it. */
  async function ledgerEqualsChain(url: string, key: string, wallet: `0x${string}`, before: bigint, payeeBefore: bigint) {
    const entries = await ledgerOf(url, key);
    const committed = entries.filter((e) => e.state === "committed").reduce((a, e) => a + BigInt(e.amount), 0n);
    const spent = before - (await emu.chain!.balanceOf(wallet));
    expect(spent).toBe(committed);
    expect((await emu.chain!.balanceOf(emu.chain!.payee)) - payeeBefore).toBe(committed);
    return { entries, committed };
  }

  it("exact over EIP-3009: paid with a payment id on the payload, ledger == chain", async () => {
    reset();
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const chain = emu.chain!;
      const [before, payeeBefore] = [await chain.balanceOf(s.wallet.address), await chain.balanceOf(chain.payee)];
      events.length = 0;
      const r = await search(s.gateway.url, s.keys.acme, { query: "exact eip-3009" });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
      const { entries } = await ledgerEqualsChain(s.gateway.url, s.keys.acme, s.wallet.address, before, payeeBefore);
      expect(entries).toHaveLength(1);
      expect(entries[0]!.nonce).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await chain.authorizationState(s.wallet.address, entries[0]!.nonce as `0x${string}`)).toBe(true);
      const settled = events.find((e) => e.event === "x402.settled");
      expect(settled?.fields?.paymentId).toMatch(/^pay_[0-9a-f]{32}$/);
    } finally {
      await s.close();
    }
  }, 60_000);

  it("exact over Permit2: refused by name until `tollgate wallet approve`, then paid; ledger == chain", async () => {
    reset();
    demand().schemes[SEARCH] = "exact-permit2";
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const chain = emu.chain!;
      const [before, payeeBefore] = [await chain.balanceOf(s.wallet.address), await chain.balanceOf(chain.payee)];
      const refused = await search(s.gateway.url, s.keys.acme, { query: "permit2 before approval" });
      expect(refused.status).toBe(503);
      const body = await refused.json();
      expect(body.code).toBe("permit2_approval_required");
      expect(body.message).toContain(`tollgate wallet approve --network ${chain.network} --asset ${chain.token.address}`);
      expect(body.command).toBe(`tollgate wallet approve --network ${chain.network} --asset ${chain.token.address}`);
      expect(JSON.stringify(body)).not.toContain(s.wallet.privateKey.slice(2));
      expect(await ledgerOf(s.gateway.url, s.keys.acme)).toHaveLength(0);
      expect(await chain.balanceOf(s.wallet.address)).toBe(before);

      const noGas = await walletCli(
        ["approve", "--network", chain.network, "--asset", chain.token.address, "--rpc", chain.rpcUrl],
        s.wallet.privateKey,
      ).catch((err: { stderr: string }) => err);
      expect((noGas as { stderr: string }).stderr).toMatch(/^tollgate: the approval of Permit2 from 0x[0-9a-fA-F]{40} was not sent: .*\n$/);
      expect((noGas as { stderr: string }).stderr).not.toContain(s.wallet.privateKey.slice(2));
      await giveGas(chain.rpcUrl, s.wallet.address);
      const out = await walletCli(
        ["approve", "--network", chain.network, "--asset", chain.token.address, "--rpc", chain.rpcUrl],
        s.wallet.privateKey,
      );
      expect(out.stdout).toContain("approved Permit2");
      expect(await chain.allowance(s.wallet.address, "0x000000000022D473030F116dDEE9F6B43aC78BA3")).toBeGreaterThan(10n ** 30n);
      const shown = await walletCli([
        "allowance",
        "--network",
        chain.network,
        "--asset",
        chain.token.address,
        "--rpc",
        chain.rpcUrl,
        "--owner",
        s.wallet.address,
      ]);
      expect(shown.stdout).toContain("unlimited");

      const r = await search(s.gateway.url, s.keys.acme, { query: "permit2 after approval" });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
      const { entries, committed } = await ledgerEqualsChain(s.gateway.url, s.keys.acme, s.wallet.address, before, payeeBefore);
      expect(committed).toBe(PRICE);
      const e = entries.find((x) => x.state === "committed")!;
      expect(e.nonce).toMatch(/^\d+$/); // a Permit2 nonce (uint256), not an EIP-3009 one
      expect(await chain.permit2NonceUsed(s.wallet.address, BigInt(e.nonce!))).toBe(true);
    } finally {
      await s.close();
    }
  }, 90_000);

  it("upto: reserves the maximum, settles the ledger to what the seller settled, releases the rest; ledger == chain", async () => {
    reset();
    demand().schemes[SEARCH] = "upto";
    demand().uptoSettlePercent = 60;
    // The policy reasons in the maximum: a per-request limit below it refuses, though the seller would settle less.
    const tight = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }], { payments: { maxPerRequest: "0.004" } });
    try {
      const r = await search(tight.gateway.url, tight.keys.acme, { query: "upto above policy" });
      expect(r.status).toBe(402);
      expect((await r.json()).code).toBe("price_above_policy");
    } finally {
      await tight.close();
    }
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const chain = emu.chain!;
      await giveGas(chain.rpcUrl, s.wallet.address);
      await walletCli(["approve", "--network", chain.network, "--asset", chain.token.address, "--rpc", chain.rpcUrl], s.wallet.privateKey);
      const [before, payeeBefore] = [await chain.balanceOf(s.wallet.address), await chain.balanceOf(chain.payee)];
      const r = await search(s.gateway.url, s.keys.acme, { query: "upto settles the actual" });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.003");
      expect(r.headers.get("x-tollgate-budget-remaining")).toBe("0.997");
      const { entries, committed } = await ledgerEqualsChain(s.gateway.url, s.keys.acme, s.wallet.address, before, payeeBefore);
      expect(committed).toBe((PRICE * 60n) / 100n);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ state: "committed", amount: "3000" });
      const usage = await (await fetch(`${s.gateway.url}/_tollgate/usage`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(usage.daily).toMatchObject({ spent: "0.003", remaining: "0.997" });
    } finally {
      await s.close();
    }
  }, 90_000);

  it("payment-identifier: a paid answer lost on the wire is fetched again with the same payment, charged once", async () => {
    reset();
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const chain = emu.chain!;
      const [before, payeeBefore] = [await chain.balanceOf(s.wallet.address), await chain.balanceOf(chain.payee)];
      demand().dropAnswers = 1;
      events.length = 0;
      const r = await search(s.gateway.url, s.keys.acme, { query: "lost on the wire" });
      expect(r.status).toBe(200);
      expect((await r.json()).status).toBe("completed");
      const settled = events.filter((e) => e.event === "x402.settled");
      const replayed = events.filter((e) => e.event === "x402.payment_id.replayed");
      expect(settled).toHaveLength(1);
      expect(events.filter((e) => e.event === "x402.answer.dropped")).toHaveLength(1);
      expect(replayed).toHaveLength(1);
      expect(replayed[0]!.fields!.paymentId).toBe(settled[0]!.fields!.paymentId);
      const { committed, entries } = await ledgerEqualsChain(s.gateway.url, s.keys.acme, s.wallet.address, before, payeeBefore);
      expect(committed).toBe(PRICE);
      expect(entries).toHaveLength(1);
    } finally {
      await s.close();
    }
  }, 60_000);

  it("settlement_pending: held as unknown (not released), committed as soon as the chain shows it; ledger == chain", async () => {
    reset();
    demand().settlementPending = true;
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }], { payments: { maxAuthorizationSeconds: 12 } });
    try {
      const chain = emu.chain!;
      const [before, payeeBefore] = [await chain.balanceOf(s.wallet.address), await chain.balanceOf(chain.payee)];
      const r = await search(s.gateway.url, s.keys.acme, { query: "pending settlement" });
      expect(r.status).toBe(502);
      const body = await r.json();
      expect(body).toMatchObject({ code: "payment_outcome_unknown", reason: "settlement_pending", held: "0.005" });
      expect(body.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      demand().settlementPending = false;
      let [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry!.state).toBe("uncertain");
      // The money did move (the transaction mined); the budget still counts it while it is unknown.
      expect(before - (await chain.balanceOf(s.wallet.address))).toBe(PRICE);
      // The reconciler asks the chain about a pending settlement on every pass, not only once it lapses: used → committed.
      expect(Date.parse(entry!.validBefore!)).toBeGreaterThan(Date.now());
      const report = await s.gateway.gateway.reconciler.runOnce();
      expect(report.committed).toBe(1);
      [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry!.state).toBe("committed");
      expect(entry!.transaction).toBe(body.transaction);
      await ledgerEqualsChain(s.gateway.url, s.keys.acme, s.wallet.address, before, payeeBefore);
    } finally {
      await s.close();
    }
  }, 60_000);

  it("upto with settlement_pending: the maximum held, then committed at what the transaction moved; ledger == chain", async () => {
    reset();
    demand().schemes[SEARCH] = "upto";
    demand().uptoSettlePercent = 40;
    demand().settlementPending = true;
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }], { payments: { maxAuthorizationSeconds: 12 } });
    try {
      const chain = emu.chain!;
      await giveGas(chain.rpcUrl, s.wallet.address);
      await walletCli(["approve", "--network", chain.network, "--asset", chain.token.address, "--rpc", chain.rpcUrl], s.wallet.privateKey);
      const [before, payeeBefore] = [await chain.balanceOf(s.wallet.address), await chain.balanceOf(chain.payee)];
      const r = await search(s.gateway.url, s.keys.acme, { query: "upto pending" });
      expect(r.status).toBe(502);
      expect(await r.json()).toMatchObject({ code: "payment_outcome_unknown", reason: "settlement_pending", held: "0.005" });
      demand().settlementPending = false;
      let [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry).toMatchObject({ state: "uncertain", amount: "5000" });
      expect(before - (await chain.balanceOf(s.wallet.address))).toBe(2000n);
      // Once its authorization lapsed (the late path: the same chain reading, the same amount; the gateway's own
      // reconciler timer may have got there first, so the entry is what is checked).
      await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(entry!.validBefore!) + 5_500 - Date.now())));
      await s.gateway.gateway.reconciler.runOnce();
      [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry).toMatchObject({ state: "committed", amount: "2000" });
      expect(entry!.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      await ledgerEqualsChain(s.gateway.url, s.keys.acme, s.wallet.address, before, payeeBefore);
      const usage = await (await fetch(`${s.gateway.url}/_tollgate/usage`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(usage.daily.spent).toBe("0.002");
    } finally {
      await s.close();
    }
  }, 90_000);

  it("offers only for what the gateway cannot pay (Solana): the answer names them, nothing is held or paid", async () => {
    reset();
    demand().schemes[SEARCH] = "solana";
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "1.00" } }]);
    try {
      const before = await emu.chain!.balanceOf(s.wallet.address);
      const r = await search(s.gateway.url, s.keys.acme, { query: "solana only" });
      expect(r.status).toBe(402);
      const body = await r.json();
      expect(body.code).toBe("no_payable_payment_option");
      expect(body.message).toContain("exact on solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
      expect(body.offered).toEqual([
        expect.objectContaining({ scheme: "exact", network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", price: "0.005" }),
      ]);
      expect(await ledgerOf(s.gateway.url, s.keys.acme)).toHaveLength(0);
      expect(await emu.chain!.balanceOf(s.wallet.address)).toBe(before);
    } finally {
      await s.close();
    }
  }, 60_000);
});
