// The reliability stack: the emulator (x402 + local chain, sandboxes, optionally sessions) behind a fault proxy, and a
// gateway *process* in front (so its memory can be read and a crash seen), with three tenants and a few live resources.
import { randomBytes } from "node:crypto";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import type { ChainHandle } from "../../emulator/types.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { startFaultProxy, type FaultProxy } from "./fault-proxy.js";

export interface ReliabilityStack {
  emu: EmulatorHandle;
  proxy: FaultProxy;
  gw: GatewayProcess;
  /** acme: every scope; rival: another tenant; ops: admin. */
  keys: { acme: string; rival: string; ops: string };
  wallet: { address: `0x${string}`; privateKey: `0x${string}` };
  sandboxId?: string;
  sessionId?: string;
  /** Gateway tokens minted for acme: runtime (+terminal, ports) on the sandbox, a capped search token, session. */
  tokens: { sandbox?: string; search: string; session?: string };
  /** Secrets that must never appear in a response. */
  secrets: string[];
  /** Restart the gateway process (same config and secrets). */
  restartGateway(): Promise<GatewayProcess>;
  close(): Promise<void>;
}

export interface StackOptions {
  sessions?: boolean;
  /** Start the sandbox module and create one sandbox (default true). */
  sandbox?: boolean;
  /** A chain started by the test (to stop it by PID); the emulator starts its own otherwise. */
  chain?: ChainHandle;
  /** Shared state (`{ backend: "redis", redisUrl }`); memory when unset. */
  state?: Record<string, unknown>;
  payments?: Record<string, unknown>;
  timeoutMs?: number;
  dailyBudget?: string;
  logLevel?: string;
}

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: ${res.status} ${text}`);
  return JSON.parse(text);
}

export async function startReliabilityStack(o: StackOptions = {}): Promise<ReliabilityStack> {
  const modules: Array<"x402" | "sandboxes" | "sessions"> = ["x402"];
  if (o.sandbox !== false) modules.push("sandboxes");
  if (o.sessions) modules.push("sessions");
  const emu = await startEmulator({ modules, chain: o.chain });
  const chain = emu.chain!;
  const proxy = await startFaultProxy(emu.controlUrl);
  const wallet = await chain.createFundedWallet(100_000_000n);
  const keys = { acme: generateTenantKey(), rival: generateTenantKey(), ops: generateTenantKey() };
  const runtimePort = new URL(emu.runtimeUrl).port || "1";
  const config = {
    server: { host: "127.0.0.1", port: 0, logLevel: o.logLevel ?? "error" },
    upstream: {
      baseUrl: proxy.url,
      timeoutMs: o.timeoutMs ?? 30_000,
      allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`, new URL(emu.controlUrl).host],
    },
    payments: {
      networks: [chain.network],
      assets: [chain.token.address],
      maxPerRequest: "0.50",
      rpc: { [chain.network]: chain.rpcUrl },
      ...o.payments,
    },
    state: o.state,
    tenants: [
      {
        id: "acme",
        scopes: ["search", "sessions", "sandboxes", "jobs", "agents"],
        keys: [{ hash: await hashTenantKey(keys.acme) }],
        budget: { daily: o.dailyBudget ?? "0.50" },
        quotas: { maxSandboxes: 2, maxSessions: 1, maxTimeoutMinutes: 30 },
      },
      {
        id: "rival",
        keys: [{ hash: await hashTenantKey(keys.rival) }],
        budget: { daily: "0.05" },
        quotas: { maxSandboxes: 1, maxSessions: 0 },
      },
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
    ],
  };
  const env = {
    TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
    TOLLGATE_WALLET_KEY: wallet.privateKey,
    TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
  };
  let gw = await startGatewayProcess(config, env);
  const headers = { "x-api-key": keys.acme, "content-type": "application/json" };
  const mint = async (body: unknown) =>
    (await json(await fetch(`${gw.url}/_tollgate/tokens`, { method: "POST", headers, body: JSON.stringify(body) }), "mint"))
      .token as string;

  const stack: ReliabilityStack = {
    emu,
    proxy,
    gw,
    keys,
    wallet,
    tokens: { search: await mint({ kind: "search", cap: "0.05" }) },
    secrets: [emu.apiKey, wallet.privateKey.slice(2), env.TOLLGATE_TOKEN_SECRET],
    async restartGateway() {
      await gw.stop();
      gw = await startGatewayProcess(config, env);
      stack.gw = gw;
      return gw;
    },
    async close() {
      await gw.stop().catch(() => {});
      await proxy.close().catch(() => {});
      await emu.close().catch(() => {});
    },
  };
  try {
    if (o.sandbox !== false) {
      const sbx = await json(
        await fetch(`${gw.url}/api/sandbox`, { method: "POST", headers, body: JSON.stringify({ imageName: "node" }) }),
        "sandbox",
      );
      stack.sandboxId = sbx.id;
      stack.tokens.sandbox = await mint({ kind: "sandbox", sandboxId: sbx.id, scopes: ["runtime", "terminal", "ports"] });
    }
    if (o.sessions) {
      const ses = await json(await fetch(`${gw.url}/api/session`, { method: "POST", headers, body: "{}" }), "session");
      stack.sessionId = ses.id;
      stack.tokens.session = await mint({ kind: "session", sessionId: ses.id });
    }
  } catch (e) {
    await stack.close();
    throw e;
  }
  return stack;
}
