// When each key was last used, cheaply: a key's use is written to shared state at most once a minute per key and
// instance (a local note of the last write keeps the hot path to a map lookup), so "last used" is exact to a minute.
import { LRUCache } from "lru-cache";
import type { GatewayServices } from "../services.js";

const WRITE_EVERY_MS = 60_000;
/** Kept this long after the last use (a key unused for longer shows "never" again). */
const KEEP_MS = 400 * 86_400_000;
const usedKey = (hash: string) => `key:last-used:${hash}`;

/** The listener TenantDirectory calls on each successful key lookup. */
export function keyUseRecorder(services: Pick<GatewayServices, "stores" | "now" | "background">): (hash: string) => void {
  const written = new LRUCache<string, number>({ max: 10_000 });
  return (hash) => {
    const now = services.now();
    const last = written.get(hash);
    if (last !== undefined && now - last < WRITE_EVERY_MS) return;
    written.set(hash, now);
    services.background(undefined, services.stores.kv.set(usedKey(hash), String(now), KEEP_MS), "key last-used");
  };
}

/** Last use (epoch ms) of each key hash given, where known. */
export async function lastUsed(services: Pick<GatewayServices, "stores">, hashes: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  await Promise.all(
    hashes.map(async (h) => {
      const v = await services.stores.kv.get(usedKey(h));
      if (v && /^\d+$/.test(v)) out.set(h, Number(v));
    }),
  );
  return out;
}
