// A request body the runtime already holds in full, handed out without reading it through the Request: on Node a
// small body usually arrives with its head and sits parsed in the request's buffer (src/host/node/held-body.ts).
// Elsewhere (Workers, a Request made in-process) there is none, and the body is read from the Request as usual. The
// taker is the gateway's (platform.heldBody, src/web/speed.ts), set by the Node entry when its fast paths are on.
import type { Context } from "hono";
import type { PlatformSpeed } from "./speed.js";

const utf8 = new TextDecoder();

/** A held body's text, decoded as TextDecoder would. */
export function heldBodyText(platform: PlatformSpeed, bytes: Uint8Array): string {
  const decode = platform.heldText;
  return decode ? decode(bytes) : utf8.decode(bytes);
}

/**
 * The request's whole body when the runtime holds all of its declared Content-Length and that is at most `limit`
 * bytes; undefined (at once where no runtime holds bodies): read the Request.
 */
export function heldBody(platform: PlatformSpeed, c: Context, limit: number): Uint8Array | undefined {
  return platform.heldBody?.(c, limit);
}

/**
 * heldBody one turn later. On Node the chain starts as soon as the request's head is parsed, before the parser goes on
 * to a body that arrived in the same packet: a step that has not waited for anything yet finds no body held, and finds
 * it after one turn (the turn ends once the parser has pushed what it had). Undefined, at once where no runtime holds
 * bodies, when it still is not held whole. `heldBody(p, c, n) ?? (await heldBodyNextTurn(p, c, n))`.
 */
export async function heldBodyNextTurn(platform: PlatformSpeed, c: Context, limit: number): Promise<Uint8Array | undefined> {
  const take = platform.heldBody;
  if (!take) return undefined;
  await undefined;
  return take(c, limit);
}
