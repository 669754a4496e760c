// Cloudflare Workers entry: builds the gateway from the bundled config and Worker secrets, exports fetch, the cron
// handler that reconciles held spend, and the Durable Object class that holds shared state.
import {
  accountApiKeysFromEnv,
  accountWalletKeysFromEnv,
  oidcClientSecretFromEnv,
  parseConfig,
  refuseSecretFiles,
  secretsFromEnv,
} from "../../config/load.js";
import type { TollgateConfig } from "../../config/schema.js";
import type { ExecutionContext } from "hono";
import { workersPeerAddress } from "../web/client-address.js";
import { createGateway, type Gateway } from "../gateway.js";
import { doStores, hasStateBinding, migrateDurableState } from "../state/durable-client.js";
import type { StateStores } from "../state/types.js";
import { fetchTransport } from "../web/transport.js";
import { fetchWebSocketRelay } from "../web/websocket.js";
import { FetchTracer } from "../telemetry/fetch-tracer.js";
import { VERSION } from "../operators/version.js";

export interface WorkerEnv {
  /** The whole config as JSON (a `[vars]` entry in wrangler.toml, or a secret). */
  TOLLGATE_CONFIG?: string;
  TOLLGATE_UPSTREAM_API_KEY?: string;
  TOLLGATE_WALLET_KEY?: string;
  TOLLGATE_TOKEN_SECRET?: string;
  TOLLGATE_METRICS_TOKEN?: string;
  [binding: string]: unknown;
}

export { TollgateState } from "../state/durable-object.js";

/**
 * Durable Objects when asked for, and also when merely bound: on Workers the "memory" default would give every isolate
 * its own budgets. Redis needs the Node entry.
 */
function storesFor(config: TollgateConfig, env: WorkerEnv): StateStores | undefined {
  // Each tenant's objects are created near it when the config gives it a location hint.
  const hints = new Map(config.tenants.flatMap((t) => (t.locationHint ? [[t.id, t.locationHint] as const] : [])));
  const opts = { endedRetentionMs: config.state.endedRetentionDays * 86_400_000, locationHint: (tenant: string) => hints.get(tenant) };
  if (config.state.backend === "durable-objects") return doStores(env, opts);
  if (config.state.backend === "redis") throw new Error('state.backend "redis" is for the Node entry; on Workers use "durable-objects"');
  return hasStateBinding(env) ? doStores(env, opts) : undefined;
}

let cached: { source: string; gateway: Gateway } | undefined;

function gatewayFor(env: WorkerEnv): Gateway {
  const source = env.TOLLGATE_CONFIG ?? "{}";
  if (cached?.source === source) return cached.gateway;
  const config = parseConfig(JSON.parse(source), "TOLLGATE_CONFIG");
  refuseSecretFiles(config); // secrets on Workers are bindings (docs/secrets.md)
  const envVars = env as Record<string, string | undefined>;
  const secrets = {
    ...secretsFromEnv(envVars),
    oidcClientSecret: oidcClientSecretFromEnv(config, envVars),
    accountApiKeys: accountApiKeysFromEnv(config, envVars),
    accountWalletKeys: accountWalletKeysFromEnv(config, envVars),
  };
  const gateway = createGateway(config, {
    secrets,
    // A client gone away cancels its request's subrequests on Workers: no listener on its signal a request.
    transport: { ...fetchTransport, cancelledWithClient: true },
    // workerd may cancel, as hung, a request waiting on a promise another request's I/O settles: no such wait here.
    sharedWaits: false,
    webSocketRelay: fetchWebSocketRelay,
    stores: storesFor(config, env),
    peerAddress: workersPeerAddress,
    // Traces over OTLP/HTTP with fetch, sent beside each request (waitUntil): [tracing] otlpEndpoint.
    tracer: config.tracing.otlpEndpoint
      ? new FetchTracer({ endpoint: config.tracing.otlpEndpoint, serviceName: config.tracing.serviceName, version: VERSION })
      : undefined,
  });
  cached = { source, gateway };
  return gateway;
}

interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

export default {
  fetch(request: Request, env: WorkerEnv, ctx: unknown): Response | Promise<Response> {
    return gatewayFor(env).app.fetch(request, env, ctx as ExecutionContext);
  },

  /**
   * The cron trigger (`[triggers] crons` in wrangler.toml): one reconciler pass and one alert pass (rules, webhook
   * retries due), as the Node entry runs on timers.
   * x402 holds past validBefore are settled from the chain through payments.rpc (JSON-RPC over fetch); credits holds
   * past their end time are committed at their maximum. Holds live in the Durable Objects, so any invocation sees all.
   * Also one step of moving ownership out of the previous layout's one object, until it is empty.
   */
  async scheduled(_controller: unknown, env: WorkerEnv, ctx: WaitUntil): Promise<void> {
    const gateway = gatewayFor(env);
    const pass = Promise.all([
      gateway.reconciler.runOnce().then(
        (report) => gateway.logger.info("reconciler pass", { ...report }),
        (err) => gateway.logger.error("reconciler error", { error: String(err) }),
      ),
      gateway.alerts.runOnce(), // alert rules, and webhook deliveries due (retries)
      // State left in the previous layout's objects moved out, a batch a run (docs/state-layout.md).
      migrateDurableState(gateway.stores).catch((err) => gateway.logger.error("state migration error", { error: String(err) })),
    ]);
    ctx.waitUntil(pass);
    await pass;
  },
};
