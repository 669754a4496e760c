// Which shared-state backend the Node entry uses: memory (one process, the default) or Redis (several instances).
import type { TollgateConfig } from "../../../config/schema.js";
import type { RedisTarget } from "../../state/redis-connection.js";
import { redisStores } from "../../state/redis.js";
import type { StateStores } from "../../state/types.js";

/** A connection error, at most once per 30 s while Redis stays unreachable (ioredis retries every second). */
export type StateErrorLog = (message: string, fields: Record<string, unknown>) => void;

/** Stores for config.state.backend, or undefined for the memory default that createGateway builds itself. */
export function nodeStateStores(config: TollgateConfig, log: StateErrorLog = () => {}): StateStores | undefined {
  const { backend, redisUrl, sentinels, sentinelName, clusterNodes } = config.state;
  if (backend === "durable-objects") {
    throw new Error('state.backend: "durable-objects" runs only on Workers; use "redis" to share state between Node instances');
  }
  if (backend !== "redis") return undefined;
  let lastLogged = 0;
  const node = (hp: string) => ({ host: hp.slice(0, hp.lastIndexOf(":")), port: Number(hp.slice(hp.lastIndexOf(":") + 1)) });
  const target: RedisTarget = clusterNodes
    ? { cluster: clusterNodes.map(node), password: process.env.TOLLGATE_REDIS_PASSWORD }
    : sentinels
      ? { sentinels: sentinels.map(node), name: sentinelName!, password: process.env.TOLLGATE_REDIS_PASSWORD }
      : redisUrl!;
  return redisStores(target, {
    confirmReplicas: config.state.confirmReplicas,
    confirmTimeoutMs: config.state.confirmTimeoutMs,
    endedRetentionMs: config.state.endedRetentionDays * 86_400_000,
    ...(config.state.ledgerLayout ? { ledgerLayout: config.state.ledgerLayout } : {}),
    ...(config.state.ownershipLayout ? { ownershipLayout: config.state.ownershipLayout } : {}),
    onError: (err) => {
      if (Date.now() - lastLogged < 30_000) return;
      lastLogged = Date.now();
      log("state backend unreachable; paid calls fail closed until it is back", { backend, error: err.message });
    },
  });
}
