// Which shared-state backend the Node entry uses: memory (one process, the default) or Redis (several instances).
import type { TollgateConfig } from "../../config/schema.js";
import { redisStores } from "../state/redis.js";
import type { StateStores } from "../state/types.js";

/** A connection error, at most once per 30 s while Redis stays unreachable (ioredis retries every second). */
export type StateErrorLog = (message: string, fields: Record<string, unknown>) => void;

/** Stores for config.state.backend, or undefined for the memory default that createGateway builds itself. */
export function nodeStateStores(config: TollgateConfig, log: StateErrorLog = () => {}): StateStores | undefined {
  const { backend, redisUrl } = config.state;
  if (backend === "durable-objects") {
    throw new Error('state.backend: "durable-objects" runs only on Workers; use "redis" to share state between Node instances');
  }
  if (backend !== "redis") return undefined;
  let lastLogged = 0;
  return redisStores(redisUrl!, {
    onError: (err) => {
      if (Date.now() - lastLogged < 30_000) return;
      lastLogged = Date.now();
      log("state backend unreachable; paid calls fail closed until it is back", { backend, error: err.message });
    },
  });
}
