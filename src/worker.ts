// Cloudflare Workers entry: builds the gateway from the bundled config and Worker secrets, exports fetch.
import { parseConfig, secretsFromEnv } from "../config/load.js";
import { createGateway, type Gateway } from "./gateway.js";
import { fetchTransport } from "./transport.js";
import { fetchWebSocketRelay } from "./websocket.js";

export interface WorkerEnv {
  /** The whole config as JSON (a `[vars]` entry in wrangler.toml, or a secret). */
  TOLLGATE_CONFIG?: string;
  TOLLGATE_UPSTREAM_API_KEY?: string;
  TOLLGATE_WALLET_KEY?: string;
  TOLLGATE_TOKEN_SECRET?: string;
  [binding: string]: unknown;
}

let cached: { source: string; gateway: Gateway } | undefined;

function gatewayFor(env: WorkerEnv): Gateway {
  const source = env.TOLLGATE_CONFIG ?? "{}";
  if (cached?.source === source) return cached.gateway;
  const config = parseConfig(JSON.parse(source), "TOLLGATE_CONFIG");
  const secrets = secretsFromEnv(env as Record<string, string | undefined>);
  const gateway = createGateway(config, { secrets, transport: fetchTransport, webSocketRelay: fetchWebSocketRelay });
  cached = { source, gateway };
  return gateway;
}

export default {
  fetch(request: Request, env: WorkerEnv, ctx: unknown): Response | Promise<Response> {
    return gatewayFor(env).app.fetch(request, env, ctx as any);
  },
};
