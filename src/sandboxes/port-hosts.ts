// Which gateway hosts exposed-port URLs were handed out under, so a spoofed Host reaches nothing.
import type { GatewayServices } from "../services.js";
import { hostOfOrigin } from "./rewrite.js";
import { stateKeys } from "../state/keys.js";

const HANDED_OUT_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * Without a configured publicOrigin the gateway's host is whatever the client called it by; remembering which host an
 * exposed-port URL was handed out under lets the port router refuse every other (spoofed) host.
 */
export async function rememberPublicHost(services: GatewayServices, sandboxId: string, publicOrigin: string): Promise<void> {
  if (services.config.server.publicOrigin) return;
  const host = hostOfOrigin(publicOrigin);
  if (host.length <= 255) await services.stores.kv.set(stateKeys.sandboxPublicHost(sandboxId, host), "1", HANDED_OUT_TTL_MS);
}

/** True when `<port>-<id>.<rest>` names this gateway: `rest` is the public host (or one handed out for `id`). */
export async function isPublicHostFor(services: GatewayServices, sandboxId: string, rest: string): Promise<boolean> {
  const configured = services.config.server.publicOrigin;
  if (configured) return hostOfOrigin(configured) === rest;
  if (rest.length > 255) return false;
  return (await services.stores.kv.get(stateKeys.sandboxPublicHost(sandboxId, rest))) === "1";
}
