// /_tollgate/ready: ready, degraded (payments at risk, with the figures) or not_ready (503), against the real emulator,
// local chain and redis-server; /_tollgate/health stays the cheap liveness check through all of it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:net";
import type { EmulatorHandle } from "../../emulator/index.js";
import { search, startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";
import { startTestGateway } from "../helpers/gateway.js";
import { startRedisServer } from "../state/redis-server.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { sampleSum, scrape } from "./prometheus.js";

/** The readiness report; with an operator key (admin or operator-readonly) it carries the wallet's figures. */
const ready = async (url: string, key?: string) => {
  const r = await fetch(`${url}/_tollgate/ready`, { headers: key ? { "x-api-key": key } : {} });
  return { status: r.status, body: await r.json() };
};

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe("/_tollgate/ready", () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulatorWithChain();
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("is ready with a reachable state backend and upstream, a signer, and the wallet's on-chain balance above the floor", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme" }, { id: "ops", scopes: ["admin"] }], { walletFunds: 10_000_000n });
    try {
      const { status, body } = await ready(s.gateway.url, s.keys.ops);
      expect(status).toBe(200);
      expect(body.status).toBe("ready");
      expect(body.checks.state).toMatchObject({ ok: true, backend: "memory" });
      expect(body.checks.upstream).toMatchObject({ ok: true });
      expect(body.checks.signer).toMatchObject({ ok: true, present: true });
      expect(body.checks.wallet).toMatchObject({ ok: true, balance: "10.00", floor: "1.00" });
      expect(body.checks.wallet.balances).toEqual([{ network: emu.chain!.network, asset: emu.chain!.token.address, balance: "10.00" }]);
      // Neither the wallet key nor its address nor the upstream's URL is in the answer.
      const text = JSON.stringify(body);
      expect(text).not.toContain(s.wallet.address.slice(2).toLowerCase());
      expect(text).not.toContain(s.wallet.address.slice(2));
      expect(text).not.toContain(new URL(emu.controlUrl).port);
    } finally {
      await s.close();
    }
  });

  it("shows the wallet's balances and floor only to an operator key: anonymous, tenant and wrong keys see only ok", async () => {
    const s = await startPaidGateway(
      emu,
      [{ id: "acme" }, { id: "ops", scopes: ["admin"] }, { id: "watch", scopes: ["operator-readonly"] }],
      {
        walletFunds: 10_000_000n,
      },
    );
    try {
      for (const key of [undefined, s.keys.acme, "tg_wrong_key"]) {
        const { status, body } = await ready(s.gateway.url, key);
        expect(status).toBe(200);
        expect(body.status).toBe("ready");
        expect(body.checks.wallet).toEqual({ ok: true });
        expect(JSON.stringify(body)).not.toContain("10.00");
      }
      for (const key of [s.keys.ops, s.keys.watch]) {
        const { body } = await ready(s.gateway.url, key);
        expect(body.checks.wallet).toMatchObject({ ok: true, balance: "10.00", floor: "1.00" });
      }
    } finally {
      await s.close();
    }
  });

  it("is degraded (still 200) with the balance and the floor when the wallet holds less than payments.minWalletBalance", async () => {
    const s = await startPaidGateway(
      emu,
      [
        { id: "acme", budget: { daily: "1.00" } },
        { id: "ops", scopes: ["admin"] },
      ],
      {
        walletFunds: 10_000n,
        payments: { minWalletBalance: "0.008" },
      },
    );
    try {
      let { status, body } = await ready(s.gateway.url, s.keys.ops);
      expect(status).toBe(200);
      expect(body.status).toBe("ready");
      expect(body.checks.wallet).toMatchObject({ ok: true, balance: "0.01", floor: "0.008" });
      // One paid search later the wallet holds $0.005, below the floor; the balance is re-read once its cache expires.
      expect((await search(s.gateway.url, s.keys.acme, { query: "spend it down" })).status).toBe(200);
      const fresh = await startPaidGatewayOnSameWallet(s);
      try {
        ({ status, body } = await ready(fresh.url, s.keys.ops));
        expect(status).toBe(200);
        expect(body.status).toBe("degraded");
        expect(body.checks.wallet).toMatchObject({ ok: false, balance: "0.005", floor: "0.008" });
        expect(body.checks.wallet.error).toMatch(/below the floor/);
        // Anyone else sees that the wallet check failed, not by how much.
        const anonymous = (await ready(fresh.url)).body;
        expect(anonymous.status).toBe("degraded");
        expect(anonymous.checks.wallet).toEqual({ ok: false, error: "the wallet check failed (details for operators)" });
      } finally {
        await fresh.close();
      }
    } finally {
      await s.close();
    }
  });

  it("is degraded without a wallet key: paid calls cannot be made, everything else can", async () => {
    const s = await startPaidGateway(emu, [{ id: "acme" }], { secrets: { walletKey: undefined } });
    try {
      const { status, body } = await ready(s.gateway.url);
      expect(status).toBe(200);
      expect(body.status).toBe("degraded");
      expect(body.checks.signer).toMatchObject({ ok: false, present: false });
      expect(body.checks.signer.error).toMatch(/TOLLGATE_WALLET_KEY/);
    } finally {
      await s.close();
    }
  });

  it("is not ready (503) while the upstream cannot be reached; health still answers 200", async () => {
    const port = await closedPort();
    const s = await startPaidGateway(emu, [{ id: "acme" }], { upstreamUrl: `http://127.0.0.1:${port}` });
    try {
      const { status, body } = await ready(s.gateway.url);
      expect(status).toBe(503);
      expect(body.status).toBe("not_ready");
      expect(body.checks.upstream).toMatchObject({ ok: false, error: "the upstream could not be reached" });
      expect(JSON.stringify(body)).not.toContain(String(port));
      expect((await fetch(`${s.gateway.url}/_tollgate/health`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it("is not ready (503) while Redis is down (metrics still answer and count the outage), and ready again once it is back", async () => {
    const upstream = await startEchoUpstream();
    const redis = await startRedisServer();
    const opsKey = generateTenantKey();
    const gw = await startTestGateway(
      {
        upstream: { baseUrl: upstream.url },
        state: { backend: "redis", redisUrl: redis.url },
        payments: { enabled: false },
        tenants: [{ id: "ops", scopes: ["admin"], budget: { daily: "5.00" }, keys: [{ hash: await hashTenantKey(opsKey) }] }],
      },
      { upstreamApiKey: "up_live_" + "k".repeat(24) },
    );
    const ops = { "x-api-key": opsKey };
    let back: Awaited<ReturnType<typeof startRedisServer>> | undefined;
    try {
      expect((await ready(gw.url)).body.status).toBe("ready");
      await redis.stop();
      const down = await ready(gw.url);
      expect(down.status).toBe(503);
      expect(down.body.status).toBe("not_ready");
      expect(down.body.checks.state).toMatchObject({ ok: false, backend: "redis", error: "the state backend did not answer" });
      expect(JSON.stringify(down.body)).not.toContain(String(redis.port));
      expect((await fetch(`${gw.url}/_tollgate/health`)).status).toBe(200);
      // Metrics still answer during the outage: the state is down, the outage is counted, no stale budget figure.
      expect((await fetch(`${gw.url}/_tollgate/usage`, { headers: ops })).status).toBe(503);
      const { families } = await scrape(gw.url, ops);
      expect(sampleSum(families, "tollgate_state_up")).toBe(0);
      expect(sampleSum(families, "tollgate_state_errors_total")).toBeGreaterThanOrEqual(2);
      expect(sampleSum(families, "tollgate_budget_remaining_usd", { tenant: "ops" })).toBe(0);
      expect(families.find((f) => f.name === "tollgate_budget_remaining_usd")?.metrics ?? []).toHaveLength(0);

      back = await startRedisServer(redis.port);
      let again = down;
      for (let i = 0; i < 50 && again.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        again = await ready(gw.url);
      }
      expect(again.status).toBe(200);
      expect(again.body.checks.signer).toMatchObject({ ok: true, payments: "disabled" });
      const after = (await scrape(gw.url, ops)).families;
      expect(sampleSum(after, "tollgate_state_up")).toBe(1);
      expect(sampleSum(after, "tollgate_budget_remaining_usd", { tenant: "ops", window: "daily" })).toBe(5);
    } finally {
      await gw.close();
      await back?.stop();
      await redis.stop().catch(() => {});
      await upstream.close();
    }
  }, 60_000);
});

/** A second gateway on the first one's wallet: a fresh readiness cache reads the balance as it is now. */
async function startPaidGatewayOnSameWallet(s: Awaited<ReturnType<typeof startPaidGateway>>) {
  const { startNodeGateway } = await import("../../src/host/node.js");
  const running = await startNodeGateway({
    config: s.gateway.gateway.services.config,
    secrets: s.secrets,
    logSink: () => {},
  });
  return running;
}
