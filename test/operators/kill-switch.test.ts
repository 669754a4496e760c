// The kill switch against the real emulator: a tenant with onExhausted = "stop" that spends its budget has its
// sandbox and browser session stopped upstream, its open terminal WebSocket closed and its gateway tokens revoked;
// an admin disabling a tenant does the same, also for a socket open on another instance (Redis).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import WebSocket from "ws";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { parseConfig } from "../../config/load.js";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { search } from "../helpers/paid-stack.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";

let emu: EmulatorHandle;
let redis: RedisServer;
const keys = { acme: generateTenantKey(), globex: generateTenantKey(), ops: generateTenantKey() };
const gws: RunningGateway[] = [];

beforeAll(async () => {
  [emu, redis] = await Promise.all([
    startEmulator({
      modules: ["x402", "sandboxes", "sessions"],
      // No time charged upstream: stopped resources settle from the table's estimate (whole minutes), which this budget
      // arithmetic is written against (test/gateway/credit-settlement.test.ts covers the upstream's own figures).
      credits: { browserMinute: 0, sandboxVcpuMinute: 0, sandboxGiBMinute: 0 },
    }),
    startRedisServer(),
  ]);
}, 60_000);
afterAll(async () => {
  for (const g of gws) await g.close().catch(() => {});
  await emu?.close();
  await redis?.stop();
});

async function gateway(state: Record<string, unknown>, tokenSecret: string): Promise<RunningGateway> {
  const chain = emu.chain!;
  const wallet = await chain.createFundedWallet(10_000_000n);
  const runtimePort = new URL(emu.runtimeUrl).port;
  const all = ["search", "sessions", "sandboxes"];
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: emu.controlUrl, timeoutMs: 60_000, allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`] },
    payments: { networks: [chain.network], assets: [chain.token.address], maxPerRequest: "0.50" },
    cache: { enabled: false },
    state,
    tenants: [
      { id: "acme", scopes: all, keys: [{ hash: await hashTenantKey(keys.acme) }], budget: { daily: "0.0168" }, onExhausted: "stop" }, // two searches plus 2 minutes each of a sandbox and a session
      { id: "globex", scopes: all, keys: [{ hash: await hashTenantKey(keys.globex) }] },
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
    ],
  });
  const gw = await startNodeGateway({ config, secrets: { upstreamApiKey: emu.apiKey, walletKey: wallet.privateKey, tokenSecret } });
  gws.push(gw);
  return gw;
}

/** Opens a terminal in the sandbox through the gateway with its gateway token; resolves once the socket is open. */
async function openTerminal(gw: RunningGateway, sandboxId: string, token: string) {
  const auth = { authorization: `Bearer ${token}`, host: `localhost:${gw.port}` };
  const res = await fetch(`http://127.0.0.1:${gw.port}/sandbox/${sandboxId}/pty`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ command: "bash", args: ["--norc", "--noprofile"] }),
  });
  const body = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`pty refused ${res.status}: ${JSON.stringify(body)} token=${String(token).slice(0, 12)}`);
  const ptyId = body.pty.id;
  const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/sandbox/${sandboxId}/pty/${ptyId}/ws?sessionId=${sandboxId}`, { headers: auth });
  const closed = new Promise<{ code: number; at: number }>((resolve) => ws.on("close", (code) => resolve({ code, at: performance.now() })));
  ws.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_q, r) => reject(new Error(`terminal refused ${r.statusCode}`)));
  });
  return { ws, closed };
}

const detail = async (gw: RunningGateway, key: string, path: string) =>
  (await (
    await fetch(`http://127.0.0.1:${gw.port}${path}`, { headers: { "x-api-key": key, host: `localhost:${gw.port}` } })
  ).json()) as any;

describe("kill switch", () => {
  it('stops the sandbox and session and closes the terminal of a tenant whose budget runs out with onExhausted = "stop"', async () => {
    const gw = await gateway({ backend: "memory" }, randomBytes(32).toString("hex"));
    const sdk = new Hyperbrowser({ apiKey: keys.acme, baseUrl: `http://localhost:${gw.port}` });
    const sbx = await sdk.sandboxes.create({ imageName: "node", timeoutMinutes: 2 }); // 2 min of credits each leaves room for a search or two
    const session = await sdk.sessions.create({ timeoutMinutes: 2 });
    const token = (await detail(gw, keys.acme, `/api/sandbox/${sbx.id}`)).token as string;
    const term = await openTerminal(gw, sbx.id, token);

    // $0.005 a search and $0.0068 of reserved credits against $0.0168 a day: the second search reaches the limit.
    for (let i = 0; i < 2; i++) expect((await search(gw.url, keys.acme, { query: `kill switch ${i}` })).status).toBe(200);
    const t0 = performance.now();
    const closed = await Promise.race([term.closed, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
    expect(closed).not.toBeNull();
    console.log(`[kill switch] terminal closed ${(closed!.at - t0).toFixed(0)} ms after the budget ran out`);

    // The kill finishes (sandboxes, then sessions) and is audited.
    let kill: any;
    for (let i = 0; i < 100 && !kill; i++) {
      kill = (await detail(gw, keys.ops, "/_tollgate/admin/audit?limit=10")).entries.find((e: any) => e.action === "tenant.kill");
      if (!kill) await new Promise((r) => setTimeout(r, 100));
    }
    expect(kill).toMatchObject({
      actor: "system",
      target: "tenant:acme",
      after: { reason: "daily budget exhausted", stopped: { sandboxes: [sbx.id], sessions: [session.id] }, failed: [] },
    });
    expect((await detail(gw, keys.acme, `/api/sandbox/${sbx.id}`)).status).toBe("closed");
    expect((await detail(gw, keys.acme, `/api/session/${session.id}`)).status).not.toBe("active");
    // The sandbox's gateway token is revoked: the runtime refuses it.
    const runtime = await fetch(`http://127.0.0.1:${gw.port}/sandbox/${sbx.id}/processes`, {
      headers: { authorization: `Bearer ${token}`, host: `localhost:${gw.port}` },
    });
    expect(((await runtime.json()) as any).code).toBe("token_revoked");
    // The tenant itself is not disabled ("stop" is not "disable"): its key still reads, and further paid calls are refused.
    expect((await search(gw.url, keys.acme, { query: "after the kill" })).status).toBe(402);
  }, 120_000);

  it("an admin disabling a tenant on one instance closes its terminal open on another (Redis)", async () => {
    const secret = randomBytes(32).toString("hex");
    const state = { backend: "redis", redisUrl: redis.url };
    const [a, b] = [await gateway(state, secret), await gateway(state, secret)];
    const sdk = new Hyperbrowser({ apiKey: keys.globex, baseUrl: `http://localhost:${b.port}` });
    const sbx = await sdk.sandboxes.create({ imageName: "node", timeoutMinutes: 2 }); // 2 min of credits each leaves room for a search or two
    const term = await openTerminal(b, sbx.id, (await detail(b, keys.globex, `/api/sandbox/${sbx.id}`)).token);
    const t0 = performance.now();
    const r = await fetch(`${a.url}/_tollgate/admin/tenants/globex/disable`, { method: "POST", headers: { "x-api-key": keys.ops } });
    expect(r.status).toBe(200);
    const closed = await Promise.race([term.closed, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
    expect(closed).not.toBeNull();
    console.log(`[kill switch] terminal on the other instance closed ${(closed!.at - t0).toFixed(0)} ms after the disable`);
    expect((await detail(a, keys.ops, "/_tollgate/admin/audit?limit=5")).entries.map((e: any) => e.action)).toEqual(
      expect.arrayContaining(["tenant.kill", "tenant.disable"]),
    );
    // The tenant's key is refused on every instance within a second of the disable.
    let code = "";
    while (performance.now() - t0 < 1500 && code !== "tenant_disabled")
      code = (await detail(b, keys.globex, `/api/sandbox/${sbx.id}`)).code;
    expect(code).toBe("tenant_disabled");
  }, 120_000);
});
