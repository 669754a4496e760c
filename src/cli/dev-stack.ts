// The embedded default: local chain + emulator + gateway with a demo configuration, no credentials needed.
import { randomBytes } from "node:crypto";
import type { configSchema, TollgateConfig } from "../../config/schema.js";
import type * as z from "zod";
import { parseConfig } from "../../config/load.js";
import { startEmulator, type EmulatorHandle, type EmulatorOptions } from "@tollgate/emulator";
import { generateTenantKey, hashTenantKey } from "../identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../host/node.js";
import type { LogSink } from "../log.js";

export interface DevStack {
  gateway: RunningGateway;
  emulator: EmulatorHandle;
  config: TollgateConfig;
  /** Demo tenant keys, by tenant id. Generated at start; printed once. */
  tenants: Record<string, string>;
  payer: `0x${string}`;
  /** Demo buyer wallets (private keys) funded on the local chain: they hold nothing else and buy from [sales]. */
  buyers: Record<string, `0x${string}`>;
  close(): Promise<void>;
}

export interface DevStackOptions {
  host?: string;
  port?: number;
  logSink?: LogSink;
  logLevel?: TollgateConfig["server"]["logLevel"];
  emulator?: EmulatorOptions;
  /** Starting token balance of the gateway's wallet, in atomic units (default 100 USDC). */
  walletFunds?: bigint;
  /** Adjust the demo config before the gateway starts (tests use it). */
  configure?: (raw: DemoConfig) => void;
  progress?: (msg: string) => void;
}

/** The demo configuration as written, before config/schema.ts fills in its defaults. */
type DemoConfig = z.input<typeof configSchema>;

export type DemoKeys = Record<"acme" | "initech" | "globex" | "ops", string>;

/**
 * The demo configuration fronting the emulator: two full tenants (acme, initech: isolation can be seen live), a
 * search-only one with a small budget (globex), and an admin (ops). With the local chain it also sells at demo prices
 * ([sales], docs/sales.md): a wallet with test tokens buys a search, a sandbox or a session, no key needed.
 */
export async function demoConfig(emulator: EmulatorHandle, keys: DemoKeys, server: Record<string, unknown>): Promise<DemoConfig> {
  const chain = emulator.chain;
  const runtimePort = new URL(emulator.runtimeUrl).port;
  return {
    server,
    upstream: {
      baseUrl: emulator.controlUrl,
      allowedHosts: [new URL(emulator.runtimeUrl).host, `localhost:${runtimePort}`, new URL(emulator.controlUrl).host],
    },
    payments: chain
      ? {
          networks: [chain.network],
          assets: [chain.token.address],
          maxPerRequest: "0.50",
          maxAuthorizationSeconds: 300,
          rpc: { [chain.network]: chain.rpcUrl },
        }
      : { enabled: false },
    ...(chain && emulator.facilitator
      ? {
          sales: {
            facilitator: emulator.facilitator.url,
            accept: [
              {
                network: chain.network,
                asset: chain.token.address,
                name: chain.token.name,
                version: chain.token.version,
                decimals: chain.token.decimals,
                ...(chain.chainId === 84532 ? { v1Network: "base-sepolia" } : {}),
              },
            ],
            prices: {
              search: { price: "0.01" },
              fetch: { price: "0.01" },
              session: { price: "0.05", minutes: 10 },
              sandbox: { price: "0.05", minutes: 10 },
            },
            buyer: { budget: { daily: "1.00" }, quotas: { maxSandboxes: 1, maxSessions: 1 } },
          },
        }
      : {}),
    // Secrets may name the machine's own test servers (plain http to loopback): the embedded default only.
    egress: { allowHttpLoopback: true },
    tenants: [
      {
        id: "acme",
        scopes: ["search", "sessions", "sandboxes", "jobs", "agents"],
        keys: [{ hash: await hashTenantKey(keys.acme), label: "demo" }],
        budget: { daily: "5.00", monthly: "50.00" },
        quotas: { maxSandboxes: 5, maxSessions: 3, requestsPerMinute: 600 },
      },
      {
        id: "initech",
        scopes: ["search", "sessions", "sandboxes", "jobs", "agents"],
        keys: [{ hash: await hashTenantKey(keys.initech), label: "demo" }],
        budget: { daily: "5.00", monthly: "50.00" },
        quotas: { maxSandboxes: 5, maxSessions: 3, requestsPerMinute: 600 },
      },
      {
        id: "globex",
        scopes: ["search"],
        keys: [{ hash: await hashTenantKey(keys.globex), label: "demo" }],
        budget: { daily: "0.05" },
        payment: { maxPerRequest: "0.01" },
        quotas: { requestsPerMinute: 60 },
      },
      { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops), label: "demo" }] },
    ],
  };
}

export async function startDevStack(opts: DevStackOptions = {}): Promise<DevStack> {
  const progress = opts.progress ?? (() => {});
  const host = opts.host ?? "127.0.0.1";
  progress("starting the local chain and the emulator…");
  const emulator = await startEmulator({ host, ...opts.emulator });
  try {
    const chain = emulator.chain;
    const wallet = chain ? await chain.createFundedWallet(opts.walletFunds ?? 100_000_000n) : undefined;
    // The demo buyer: a wallet with 10 test dollars and nothing else (it buys from [sales]).
    const buyer = chain ? await chain.createFundedWallet(10_000_000n) : undefined;
    const keys = { acme: generateTenantKey(), initech: generateTenantKey(), globex: generateTenantKey(), ops: generateTenantKey() };
    const raw = await demoConfig(emulator, keys, { host, port: opts.port ?? 8787, logLevel: opts.logLevel ?? "info" });
    opts.configure?.(raw);
    const config = parseConfig(raw, "demo configuration");
    progress("starting the gateway…");
    const gateway = await startNodeGateway({
      config,
      secrets: { upstreamApiKey: emulator.apiKey, walletKey: wallet?.privateKey, tokenSecret: randomBytes(32).toString("base64url") },
      logSink: opts.logSink,
    });
    // Sandboxes reach the gateway as real ones reach the internet: its $TOLLGATE_EGRESS works from inside them.
    emulator.internet.add(`localhost:${gateway.port}`);
    return {
      gateway,
      emulator,
      config,
      tenants: keys,
      payer: wallet?.address ?? "0x0000000000000000000000000000000000000000",
      buyers: buyer ? { demo: buyer.privateKey } : {},
      async close() {
        await gateway.close();
        await emulator.close();
      },
    };
  } catch (err) {
    await emulator.close();
    throw err;
  }
}
