// A time sale outlives the instance that sold it: a sandbox sold by the minute (x402 `upto`) through a gateway process
// that is then killed (SIGKILL) long before its window ends is settled at the window's end by the other instances of
// the fleet (Redis), once, though two of them sweep at the same moment: the chain shows one transfer of the window's
// price from the buyer to the gateway, and the book one line of it with that transaction.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey } from "../../src/identity/tenants.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";
import { json, sellingConfig, startSalesEmulator, uptoBuyer } from "./stack.js";

const FUNDS = 1_000_000n;
// 0.0017 a minute (the credit table's sandbox minute) with a 100 % markup: one minute sold, 0.0034.
const WINDOW = 3_400n;

describe("a time sale whose selling instance died", () => {
  let emu: EmulatorHandle;
  let redis: RedisServer;
  let seller: GatewayProcess | undefined;
  const others: RunningGateway[] = [];
  const logs: string[] = [];
  beforeAll(async () => {
    [emu, redis] = await Promise.all([startSalesEmulator(["x402", "sandboxes"]), startRedisServer()]);
  }, 180_000);
  afterAll(async () => {
    await seller?.stop().catch(() => {});
    for (const g of others) await g.close().catch(() => {});
    await emu?.close();
    await redis?.stop();
  });

  it("is settled once at its window's end by the fleet, though two instances sweep at once", async () => {
    const chain = emu.chain!;
    const wallet = await chain.createFundedWallet(10_000_000n);
    const adminKey = generateTenantKey();
    const tokenSecret = randomBytes(32).toString("hex");
    // Passes only when the test asks (a long interval): the sweeps below are the two instances' at the same moment.
    const cfg = await sellingConfig(
      emu,
      {
        prices: { sandbox: { markupPercent: 100, minutes: 1, scheme: "upto" } },
        payments: { reconcileIntervalSeconds: 3600 },
        state: { backend: "redis", redisUrl: `${redis.url}/3` },
      },
      adminKey,
    );
    seller = await startGatewayProcess(
      { ...cfg, server: { host: "127.0.0.1", port: 0, logLevel: "error" } },
      { TOLLGATE_UPSTREAM_API_KEY: emu.apiKey, TOLLGATE_WALLET_KEY: wallet.privateKey, TOLLGATE_TOKEN_SECRET: tokenSecret },
    );
    const buyer = await uptoBuyer(emu, FUNDS);
    const gatewayBefore = await chain.balanceOf(wallet.address);

    const r = await buyer.pay(`${seller.url}/api/sandbox`, json({ imageName: "node" }));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("metered");
    const sold = Date.now();
    const sandbox = await r.json();
    // The seller dies at once, its window (one minute) hardly begun: nothing has moved.
    await seller.kill();
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);

    // Two other instances of the fleet, on the same Redis.
    const secrets = { upstreamApiKey: emu.apiKey, walletKey: wallet.privateKey, tokenSecret };
    for (let i = 0; i < 2; i++) others.push(await startNodeGateway({ config: parseConfig(cfg), secrets, logSink: (l) => logs.push(l) }));
    const [b, c] = others.map((g) => g.gateway.services.sales!.due);
    // Before the window's end a sweep settles nothing.
    await Promise.all([b!.runOnce(), c!.runOnce()]);
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);

    // From the window's end, both sweep at the same moment, again and again, until the sale has settled.
    while (Date.now() - sold < 60_000) await new Promise((res) => setTimeout(res, 500));
    let paid = 0n;
    for (let i = 0; i < 40 && paid === 0n; i++) {
      const passes = await Promise.all([b!.runOnce(), c!.runOnce()]);
      expect(passes.every((p) => p.failed === 0)).toBe(true);
      paid = FUNDS - (await chain.balanceOf(buyer.address));
      if (paid === 0n) await new Promise((res) => setTimeout(res, 250));
    }
    for (let i = 0; i < 3; i++) await Promise.all([b!.runOnce(), c!.runOnce()]);
    // Once: the window's price, from the buyer to the gateway, and no more.
    expect(paid).toBe(WINDOW);
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(WINDOW);
    expect((await chain.balanceOf(wallet.address)) - gatewayBefore).toBe(WINDOW);
    expect(logs.filter((l) => l.includes("metered sale settled"))).toHaveLength(1);
    // One book line, its transaction the one the chain shows (read through either instance: the book is shared).
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    const report = await (
      await fetch(`${others[1]!.url}/_tollgate/admin/sales?tenant=${tenant}&check=chain`, { headers: { "x-api-key": adminKey } })
    ).json();
    expect(report.sales).toHaveLength(1);
    expect(report.sales[0]).toMatchObject({ amount: WINDOW.toString(), scheme: "upto", minutes: 1, chain: "matched" });
    expect(report.sales[0].row).toBe("sandbox.create");
    expect(sandbox.id).toBeTruthy();
    // Nothing is left due.
    expect(await others[0]!.gateway.services.stores.due.due("time-sale", Date.now(), 10)).toEqual([]);
  }, 240_000);
});
