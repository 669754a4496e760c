// Emulator (x402 half + local chain) and a Node gateway in front of it, with a funded gateway wallet.
import { randomBytes } from "node:crypto";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig, type Secrets } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

export interface TenantSpec {
  id: string;
  budget?: Record<string, string>;
  payment?: Record<string, unknown>;
  paysForItself?: boolean;
  scopes?: string[];
  quotas?: Record<string, unknown>;
}

export interface PaidStack {
  emulator: EmulatorHandle;
  gateway: RunningGateway;
  keys: Record<string, string>;
  wallet: { address: `0x${string}`; privateKey: `0x${string}` };
  logs: string[];
  /** The secrets the gateway was started with (a second instance of the fleet starts with the same). */
  secrets: Secrets;
  /** Restart only the gateway with another config (the emulator and chain stay). */
  close(): Promise<void>;
}

export async function startEmulatorWithChain(): Promise<EmulatorHandle> {
  return startEmulator({ modules: ["x402"] });
}

export async function startPaidGateway(
  emulator: EmulatorHandle,
  tenants: TenantSpec[],
  opts: {
    payments?: Record<string, unknown>;
    cache?: Record<string, unknown>;
    upstreamUrl?: string;
    timeoutMs?: number;
    walletFunds?: bigint;
    /** Shared state, e.g. `{ backend: "redis", redisUrl }` (memory by default). */
    state?: Record<string, unknown>;
    /** Extra secrets (a metrics token) beside the generated ones. */
    secrets?: Partial<Secrets>;
    /** The `tracing` config section (an OTLP endpoint). */
    tracing?: Record<string, unknown>;
  } = {},
): Promise<Omit<PaidStack, "emulator">> {
  const chain = emulator.chain!;
  const wallet = await chain.createFundedWallet(opts.walletFunds ?? 10_000_000n);
  const keys: Record<string, string> = {};
  const tenantConfigs = [];
  for (const t of tenants) {
    keys[t.id] = generateTenantKey();
    tenantConfigs.push({ scopes: ["search", "sessions", "sandboxes"], ...t, keys: [{ hash: await hashTenantKey(keys[t.id]) }] });
  }
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "info" },
    upstream: { baseUrl: opts.upstreamUrl ?? emulator.controlUrl, timeoutMs: opts.timeoutMs ?? 30_000 },
    payments: {
      networks: [chain.network],
      assets: [chain.token.address],
      maxPerRequest: "0.50",
      rpc: { [chain.network]: chain.rpcUrl },
      ...opts.payments,
    },
    cache: opts.cache,
    state: opts.state,
    tracing: opts.tracing,
    tenants: tenantConfigs,
  });
  const logs: string[] = [];
  const secrets: Secrets = {
    upstreamApiKey: emulator.apiKey,
    walletKey: wallet.privateKey,
    tokenSecret: randomBytes(32).toString("hex"),
    ...opts.secrets,
  };
  const gateway = await startNodeGateway({ config, secrets, logSink: (l) => logs.push(l) });
  return { gateway, keys, wallet, logs, secrets, close: () => gateway.close() };
}

export function search(gatewayUrl: string, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return fetch(`${gatewayUrl}/x402/web/search`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}
