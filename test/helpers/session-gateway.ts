// The emulator (sessions half, optionally sandboxes) and a Node gateway in front of it, with tenants and their keys.
import { randomBytes } from "node:crypto";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import type { CreditSchedule } from "../../emulator/credits.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

export interface TenantSpec {
  id: string;
  scopes?: string[];
  quotas?: Record<string, unknown>;
  budget?: { daily?: string; monthly?: string; total?: string };
  onExhausted?: "block" | "stop";
  creditMultiplier?: string;
  /** The tenant's agent policy (docs/agent-policies.md). */
  policy?: Record<string, unknown>;
  /** The tenant's named agent policies, offered at OAuth consent. */
  agentPolicies?: Record<string, Record<string, unknown>>;
}

export interface SessionGateway {
  emulator: EmulatorHandle;
  gateway: RunningGateway;
  keys: Record<string, string>;
  logs: string[];
  close(): Promise<void>;
}

export async function startSessionGateway(
  tenants: TenantSpec[],
  opts: {
    modules?: Array<"sandboxes" | "sessions" | "jobs" | "x402">;
    tokens?: { ttlSeconds: number };
    now?: () => number;
    /** The emulator keeps what it receives (`emulator.received`). */
    record?: boolean;
    /** More gateway configuration (merged over the defaults). */
    config?: Record<string, unknown>;
    /** The emulator's credit schedule (emulator/credits.ts). */
    emulatorCredits?: Partial<CreditSchedule>;
    /** The gateway's `credits` config section. */
    credits?: Record<string, unknown>;
    /** The gateway's `alerts` config section. */
    alerts?: Record<string, unknown>;
  } = {},
): Promise<SessionGateway> {
  const emulator = await startEmulator({ modules: opts.modules ?? ["sessions"], record: opts.record, credits: opts.emulatorCredits });
  try {
    const keys: Record<string, string> = {};
    const tenantConfigs = [];
    for (const t of tenants) {
      keys[t.id] = generateTenantKey();
      tenantConfigs.push({ scopes: ["search", "sessions", "sandboxes"], ...t, keys: [{ hash: await hashTenantKey(keys[t.id]!) }] });
    }
    const hostOf = (u: string) => new URL(u).host;
    // The sandbox emulator advertises its runtime as localhost:<port>; both names are its.
    const runtimeLocal = `localhost:${new URL(emulator.runtimeUrl).port}`;
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "info" },
      upstream: { baseUrl: emulator.controlUrl, allowedHosts: [hostOf(emulator.controlUrl), hostOf(emulator.runtimeUrl), runtimeLocal] },
      tokens: opts.tokens,
      credits: opts.credits,
      alerts: opts.alerts,
      tenants: tenantConfigs,
      ...opts.config,
    });
    const logs: string[] = [];
    const gateway = await startNodeGateway({
      config,
      secrets: { upstreamApiKey: emulator.apiKey, tokenSecret: randomBytes(32).toString("hex") },
      logSink: (l) => logs.push(l),
      deps: opts.now ? { now: opts.now } : undefined,
    });
    return {
      emulator,
      gateway,
      keys,
      logs,
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
