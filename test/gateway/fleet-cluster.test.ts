// Money on a Redis Cluster in the tenant layout (each tenant's ledger under its own hash tag): two gateway processes
// on a real three-primary cluster keep one budget exactly under a burst, and a gateway killed between the upstream's
// answer and its settlement is settled by the survivor's reconciler, which finds the hold by fanning out over the
// tenants' shards and the entry by its id alone. Ownership is sharded too (each resource's record on its own slot, each
// tenant's lists under its tag): another tenant's id answers 404 from either instance, exactly as a missing one.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { startEmulator } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { search } from "../helpers/paid-stack.js";
import { startStallingProxy } from "../helpers/stalling-proxy.js";
import { type RedisClusterSet, startRedisCluster } from "../state/redis-ha.js";

const PRICE = 5000n;

describe("a fleet of gateway processes on a Redis Cluster, ledger sharded by tenant", () => {
  let emu: EmulatorHandle;
  let cluster: RedisClusterSet;
  const procs: GatewayProcess[] = [];
  const keys = { acme: generateTenantKey(), globex: generateTenantKey(), initech: generateTenantKey(), ops: generateTenantKey() };

  async function fleetConfig(extra: { upstream?: string; payments?: Record<string, unknown> } = {}) {
    const chain = emu.chain!;
    return {
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: extra.upstream ?? emu.controlUrl, timeoutMs: 60_000 },
      payments: {
        networks: [chain.network],
        assets: [chain.token.address],
        maxPerRequest: "0.50",
        rpc: { [chain.network]: chain.rpcUrl },
        ...extra.payments,
      },
      cache: { enabled: false },
      state: { backend: "redis", clusterNodes: cluster.nodes.map((n) => `${n.host}:${n.port}`) },
      tenants: [
        { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }], budget: { daily: "0.05" } },
        { id: "globex", keys: [{ hash: await hashTenantKey(keys.globex) }], budget: { daily: "0.05" } },
        { id: "initech", keys: [{ hash: await hashTenantKey(keys.initech) }], budget: { daily: "0.05" } },
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
      ],
    };
  }

  beforeAll(async () => {
    [emu, cluster] = await Promise.all([startEmulator({ modules: ["x402", "sessions"] }), startRedisCluster()]);
  }, 60_000);
  afterAll(async () => {
    for (const p of procs) await p.stop().catch(() => {});
    await emu?.close();
    await cluster?.stop();
  });

  const adminLedger = async (url: string, query = "limit=1000") =>
    (await (await fetch(`${url}/_tollgate/admin/ledger?${query}`, { headers: { "x-api-key": keys.ops } })).json()).entries as any[];

  it("60 paid searches over two instances for two tenants, budget for 10 each → exactly 20 payments, chain = ledger", async () => {
    const wallet = await emu.chain!.createFundedWallet(10_000_000n);
    const env = {
      TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
      TOLLGATE_WALLET_KEY: wallet.privateKey,
      TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
    };
    const cfg = await fleetConfig();
    const [a, b] = await Promise.all([startGatewayProcess(cfg, env), startGatewayProcess(cfg, env)]);
    procs.push(a, b);
    const before = await emu.chain!.balanceOf(wallet.address);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => search(i % 2 ? a.url : b.url, i % 4 < 2 ? keys.acme : keys.globex, { query: `q ${i}` })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(20);
    expect(results.filter((r) => r.status === 402)).toHaveLength(40);
    const spent = before - (await emu.chain!.balanceOf(wallet.address));
    expect(spent).toBe(20n * PRICE);
    // The fleet view (no tenant named): both tenants' shards, merged.
    const committed = (await adminLedger(b.url)).filter((e) => e.state === "committed");
    expect(committed).toHaveLength(20);
    expect(committed.reduce((s, e) => s + BigInt(e.amount), 0n)).toBe(spent);
    expect(new Set(committed.map((e) => e.tenant))).toEqual(new Set(["acme", "globex"]));
    for (const t of ["acme", "globex"]) expect((await adminLedger(a.url, `tenant=${t}&limit=100`)).length).toBe(10);
    await Promise.all([a.stop(), b.stop()]);
  }, 180_000);

  it("resources created on one instance are the creator's on the other, and 404 to every other tenant", async () => {
    const env = { TOLLGATE_UPSTREAM_API_KEY: emu.apiKey, TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex") };
    const cfg = await fleetConfig();
    const [a, b] = await Promise.all([startGatewayProcess(cfg, env), startGatewayProcess(cfg, env)]);
    procs.push(a, b);
    const call = (url: string, key: string, path: string, method = "GET") =>
      fetch(`${url}${path}`, {
        method,
        headers: { "x-api-key": key, "content-type": "application/json" },
        ...(method === "POST" ? { body: "{}" } : {}),
      });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call(a.url, keys.acme, "/api/profile", "POST");
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { id: string }).id);
    }
    const missing = await call(b.url, keys.globex, "/api/profile/nope");
    expect(missing.status).toBe(404);
    const missingBody = (await missing.json()) as Record<string, unknown>;
    for (const id of ids) {
      expect((await call(b.url, keys.acme, `/api/profile/${id}`)).status).toBe(200);
      for (const url of [a.url, b.url]) {
        const res = await call(url, keys.globex, `/api/profile/${id}`);
        expect(res.status).toBe(404);
        expect(Object.keys((await res.json()) as object)).toEqual(Object.keys(missingBody));
        expect((await call(url, keys.globex, `/api/profile/${id}`, "DELETE")).status).toBe(404);
      }
    }
    const listOf = async (url: string, key: string) =>
      (((await (await call(url, key, "/api/profiles")).json()) as { profiles: { id: string }[] }).profiles ?? []).map((p) => p.id);
    expect((await listOf(b.url, keys.acme)).sort()).toEqual([...ids].sort());
    expect(await listOf(b.url, keys.globex)).toEqual([]);
    await Promise.all([a.stop(), b.stop()]);
  }, 120_000);

  it("a gateway killed between the answer and the settlement is settled from the chain by the survivor", async () => {
    const wallet = await emu.chain!.createFundedWallet(10_000_000n);
    const env = {
      TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
      TOLLGATE_WALLET_KEY: wallet.privateKey,
      TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
    };
    const proxy = await startStallingProxy(emu.controlUrl, "forward-then-stall");
    const cfg = await fleetConfig({ upstream: proxy.url, payments: { maxAuthorizationSeconds: 12, reconcileIntervalSeconds: 1 } });
    const victim = await startGatewayProcess(cfg, env);
    procs.push(victim);
    const before = await emu.chain!.balanceOf(wallet.address);
    const pending = search(victim.url, keys.initech, { query: "killed mid payment" }).catch((e) => e);
    const deadline = Date.now() + 20_000;
    while (before - (await emu.chain!.balanceOf(wallet.address)) !== PRICE) {
      if (Date.now() > deadline) throw new Error("payment never settled");
      await new Promise((r) => setTimeout(r, 50));
    }
    await victim.kill();
    expect(await pending).toBeInstanceOf(Error);

    const survivor = await startGatewayProcess(cfg, env);
    procs.push(survivor);
    const held = () => adminLedger(survivor.url, "tenant=initech&limit=1000");
    let entries = await held();
    const open = entries.filter((e) => e.state === "reserved" || e.state === "uncertain");
    expect(open).toHaveLength(1);
    const id = open[0].id;
    const until = Date.now() + 40_000;
    for (;;) {
      entries = await held();
      const e = entries.find((x) => x.id === id);
      if (e?.state === "committed") {
        expect(BigInt(e.amount)).toBe(before - (await emu.chain!.balanceOf(wallet.address)));
        break;
      }
      if (Date.now() > until) throw new Error(`not reconciled: ${JSON.stringify(e)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    await survivor.stop();
    await proxy.close();
  }, 120_000);
});
