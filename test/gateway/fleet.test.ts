import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import type { EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startEmulator } from "../../emulator/index.js";
import { search } from "../helpers/paid-stack.js";
import { atomicToUsd } from "../../src/payments/money.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { startStallingProxy } from "../helpers/stalling-proxy.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

const PRICE = 5000n;

describe("a fleet of gateway processes sharing Redis", () => {
  let emu: EmulatorHandle;
  let redis: RedisServer;
  const procs: GatewayProcess[] = [];
  const keys = { acme: generateTenantKey(), ops: generateTenantKey() };

  async function fleetConfig(
    prefix: string,
    extra: { upstream?: string; payments?: Record<string, unknown>; budget?: string; cache?: boolean } = {},
  ) {
    const chain = emu.chain!;
    return {
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: {
        baseUrl: extra.upstream ?? emu.controlUrl,
        timeoutMs: 60_000,
        allowedHosts: [`localhost:${new URL(emu.runtimeUrl).port}`],
      },
      payments: {
        networks: [chain.network],
        assets: [chain.token.address],
        maxPerRequest: "0.50",
        rpc: { [chain.network]: chain.rpcUrl },
        ...extra.payments,
      },
      cache: { enabled: extra.cache ?? false },
      state: { backend: "redis", redisUrl: `${redis.url}/${prefix}` },
      tenants: [
        { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }], budget: { daily: extra.budget ?? "0.10" } },
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
      ],
    };
  }

  beforeAll(async () => {
    [emu, redis] = await Promise.all([startEmulator({ modules: ["x402", "sandboxes"] }), startRedisServer()]);
  });
  afterAll(async () => {
    for (const p of procs) await p.stop().catch(() => {});
    await emu?.close();
    await redis?.stop();
  });

  const adminLedger = async (url: string) =>
    (await (await fetch(`${url}/_tollgate/admin/ledger?tenant=acme&limit=1000`, { headers: { "x-api-key": keys.ops } })).json())
      .entries as any[];

  it("200 paid searches over two instances (198 at once) with budget for 20 → exactly 20 payments, on-chain spend = ledger", async () => {
    const wallet = await emu.chain!.createFundedWallet(10_000_000n);
    const env = {
      TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
      TOLLGATE_WALLET_KEY: wallet.privateKey,
      TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
    };
    const cfg = await fleetConfig("1");
    const [a, b] = await Promise.all([startGatewayProcess(cfg, env), startGatewayProcess(cfg, env)]);
    procs.push(a, b);
    const before = await emu.chain!.balanceOf(wallet.address);
    // One paid search through each instance first (warm, and each has paid: the budget really is one budget), then a
    // burst over both. Under load one instance may win the whole burst; what must hold is the total.
    for (const gw of [a, b]) expect((await search(gw.url, keys.acme, { query: `fleet warm-up ${gw.url}` })).status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 198 }, (_, i) => search(i % 2 ? a.url : b.url, keys.acme, { query: `fleet query ${i}` })),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok).toHaveLength(18);
    expect(refused).toHaveLength(180);
    for (const r of refused.slice(0, 5)) expect((await r.json()).code).toBe("budget_exceeded");
    const spent = before - (await emu.chain!.balanceOf(wallet.address));
    expect(spent).toBe(20n * PRICE);
    const entries = await adminLedger(a.url);
    const committed = entries.filter((e) => e.state === "committed");
    expect(committed).toHaveLength(20);
    expect(committed.reduce((s, e) => s + BigInt(e.amount), 0n)).toBe(spent);
    expect(new Set(committed.map((e) => e.instance)).size).toBe(2);
    await Promise.all([a.stop(), b.stop()]);
  }, 180_000);

  it("a gateway killed with SIGKILL mid-payment leaves a ledger that reconciles with the chain after restart", async () => {
    const wallet = await emu.chain!.createFundedWallet(10_000_000n);
    const env = {
      TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
      TOLLGATE_WALLET_KEY: wallet.privateKey,
      TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
    };
    const proxy = await startStallingProxy(emu.controlUrl, "forward-then-stall");
    const cfg = await fleetConfig("2", { upstream: proxy.url, payments: { maxAuthorizationSeconds: 12, reconcileIntervalSeconds: 1 } });
    const victim = await startGatewayProcess(cfg, env);
    procs.push(victim);
    const before = await emu.chain!.balanceOf(wallet.address);
    const pending = search(victim.url, keys.acme, { query: "killed mid payment" }).catch((e) => e);
    // Wait until the upstream has settled the payment, then kill the gateway before it hears back.
    const deadline = Date.now() + 20_000;
    while (before - (await emu.chain!.balanceOf(wallet.address)) !== PRICE) {
      if (Date.now() > deadline) throw new Error("payment never settled");
      await new Promise((r) => setTimeout(r, 50));
    }
    await victim.kill();
    expect(await pending).toBeInstanceOf(Error);

    const survivor = await startGatewayProcess(cfg, env);
    procs.push(survivor);
    let entries = await adminLedger(survivor.url);
    expect(entries).toHaveLength(1);
    expect(["reserved", "uncertain"]).toContain(entries[0].state);
    expect(entries[0].nonce).toMatch(/^0x[0-9a-f]{64}$/);
    // Held until validBefore: still counted against the budget.
    const usage = await (await fetch(`${survivor.url}/_tollgate/usage`, { headers: { "x-api-key": keys.acme } })).json();
    expect(usage.daily.spent).toBe("0.005");
    // After validBefore the survivor's reconciler settles it from the chain.
    const until = Date.now() + 40_000;
    while ((entries = await adminLedger(survivor.url))[0].state !== "committed") {
      if (Date.now() > until) throw new Error(`not reconciled: ${JSON.stringify(entries[0])}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const spent = before - (await emu.chain!.balanceOf(wallet.address));
    expect(spent).toBe(BigInt(entries[0].amount));
    await survivor.stop();
    await proxy.close();
  }, 120_000);

  it("a sandbox created through one instance is usable through the other", async () => {
    const env = { TOLLGATE_UPSTREAM_API_KEY: emu.apiKey, TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex") };
    const cfg = await fleetConfig("3");
    const [a, b] = await Promise.all([startGatewayProcess(cfg, env), startGatewayProcess(cfg, env)]);
    procs.push(a, b);
    const viaA = new Hyperbrowser({ apiKey: keys.acme, baseUrl: a.url.replace("127.0.0.1", "localhost") });
    const viaB = new Hyperbrowser({ apiKey: keys.acme, baseUrl: b.url.replace("127.0.0.1", "localhost") });
    const created = await viaA.sandboxes.create({ imageName: "node" });
    try {
      const onB = await viaB.sandboxes.connect(created.id);
      const r = await onB.exec("echo served-by-b");
      expect(r.stdout.trim()).toBe("served-by-b");
      const listed = await viaB.sandboxes.list();
      expect(listed.sandboxes.map((x: { id: string }) => x.id)).toContain(created.id);
    } finally {
      await viaB.sandboxes.stop(created.id);
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 120_000);

  it("100 identical concurrent searches over two instances → one payment, 100 answers (fleet-wide coalescing)", async () => {
    const wallet = await emu.chain!.createFundedWallet(10_000_000n);
    const env = {
      TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
      TOLLGATE_WALLET_KEY: wallet.privateKey,
      TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
    };
    const cfg = await fleetConfig("4", { cache: true });
    const [a, b] = await Promise.all([startGatewayProcess(cfg, env), startGatewayProcess(cfg, env)]);
    procs.push(a, b);
    const before = await emu.chain!.balanceOf(wallet.address);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => search(i % 2 ? a.url : b.url, keys.acme, { query: "fleet identical query" })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const how = results.map((r) => r.headers.get("x-tollgate-cache"));
    expect(how.filter((h) => h === "miss")).toHaveLength(1);
    expect(new Set(await Promise.all(results.map((r) => r.text())))).toHaveProperty("size", 1);
    expect(before - (await emu.chain!.balanceOf(wallet.address))).toBe(PRICE);
    // A later request on the other instance is a hit from the fleet's shared answer.
    const later = await search(a.url, keys.acme, { query: "fleet identical query" });
    expect(later.headers.get("x-tollgate-cache")).toBe("hit");
    // Savings are counted for the whole fleet: either instance reports the 100 answers it did not pay for (each
    // instance writes its figures within 2 s).
    const savedBy = async (url: string) =>
      (await (await fetch(`${url}/_tollgate/usage`, { headers: { "x-api-key": keys.acme } })).json()).savings;
    // Each instance adds its own in-memory figures to what the others have written: both views are whole once both
    // instances have written theirs (either may be the later one).
    let seen: { hits: number; coalesced: number; savedUsd: string } | undefined;
    let other: typeof seen;
    for (let i = 0; i < 60; i++) {
      [seen, other] = await Promise.all([savedBy(b.url), savedBy(a.url)]);
      if (seen && other && seen.hits + seen.coalesced === 100 && other.hits + other.coalesced === 100) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(seen!.hits + seen!.coalesced).toBe(100);
    expect(Number(seen!.savedUsd)).toBeCloseTo(Number(atomicToUsd(PRICE)) * 100, 6);
    expect(other).toEqual(seen);
    await Promise.all([a.stop(), b.stop()]);
  }, 120_000);

  it("fails closed when Redis is down: no reservation, no signature, a clear 503", async () => {
    const own = await startRedisServer();
    try {
      const wallet = await emu.chain!.createFundedWallet(10_000_000n);
      const env = {
        TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
        TOLLGATE_WALLET_KEY: wallet.privateKey,
        TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
      };
      const cfg = await fleetConfig("0");
      cfg.state.redisUrl = own.url;
      const gw = await startGatewayProcess(cfg, env);
      procs.push(gw);
      expect((await search(gw.url, keys.acme, { query: "before the outage" })).status).toBe(200);
      const before = await emu.chain!.balanceOf(wallet.address);
      await own.stop();
      const r = await search(gw.url, keys.acme, { query: "during the outage" });
      expect(r.status).toBe(503);
      const body = await r.json();
      expect(body.code).toBe("state_unavailable");
      expect(body.message).toMatch(/will not pay/);
      expect(await emu.chain!.balanceOf(wallet.address)).toBe(before);
      // The process is still up and answers its health check.
      expect((await fetch(`${gw.url}/_tollgate/health`)).status).toBe(200);
      await gw.stop();
    } finally {
      await own.stop();
    }
  }, 60_000);
});
