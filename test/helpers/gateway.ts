// Starts a Node gateway on 127.0.0.1:0 with a captured log, for tests.
import { parseConfig } from "../../config/load.js";
import { startNodeGateway } from "../../src/host/node.js";
import type { Secrets } from "../../config/load.js";

export async function startTestGateway(raw: Record<string, any>, secrets: Secrets) {
  const lines: string[] = [];
  const config = parseConfig({ ...raw, server: { host: "127.0.0.1", port: 0, logLevel: "debug", ...(raw.server ?? {}) } });
  const running = await startNodeGateway({ config, secrets, logSink: (l) => lines.push(l) });
  return { ...running, logs: lines };
}

/** A gateway with no upstream behind it (127.0.0.1:9), no tenants and errors-only logs: for the server's own behaviour. */
export function startBareGateway() {
  return startNodeGateway({
    config: parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [],
    }),
    secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) },
  });
}
