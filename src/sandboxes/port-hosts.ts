// Which gateway hosts exposed-port URLs were handed out under, so a spoofed Host reaches nothing.
import { LRUCache } from "lru-cache";
import type { GatewayServices } from "../services.js";
import { hostOfOrigin } from "./rewrite.js";
import { stateKeys } from "../state/keys.js";

const HANDED_OUT_TTL_MS = 7 * 24 * 3600 * 1000;
/** A host this instance wrote lately is not written again before this long (the record lives 7 days). */
const REWRITE_AFTER_MS = 3600 * 1000;

/** Hosts this instance wrote, and when (services.publicHosts): a control read of the same sandbox writes nothing again. */
export type PublicHostsWritten = LRUCache<string, number>;

/** A gateway's memory of the hosts it wrote, empty (createGateway). */
export const publicHostsWritten = (): PublicHostsWritten => new LRUCache<string, number>({ max: 10_000 });

/**
 * Without a configured publicOrigin the gateway's host is whatever the client called it by; remembering which host an
 * exposed-port URL was handed out under lets the port router refuse every other (spoofed) host.
 */
export async function rememberPublicHost(services: GatewayServices, sandboxId: string, publicOrigin: string): Promise<void> {
  if (services.config.server.publicOrigin) return;
  const host = hostOfOrigin(publicOrigin);
  if (host.length > 255) return;
  const key = stateKeys.sandboxPublicHost(sandboxId, host);
  const seen = services.publicHosts;
  const now = services.now();
  const at = seen.get(key);
  if (at !== undefined && now - at < REWRITE_AFTER_MS && now >= at) return;
  await services.stores.kv.set(key, "1", HANDED_OUT_TTL_MS);
  seen.set(key, now);
}

/** True when `<port>-<id>.<rest>` names this gateway: `rest` is the public host (or one handed out for `id`). */
export async function isPublicHostFor(services: GatewayServices, sandboxId: string, rest: string): Promise<boolean> {
  const configured = services.config.server.publicOrigin;
  if (configured) return hostOfOrigin(configured) === rest;
  if (rest.length > 255) return false;
  return (await services.stores.kv.get(stateKeys.sandboxPublicHost(sandboxId, rest))) === "1";
}
