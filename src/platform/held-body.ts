// A request body the runtime already holds in full, handed out without reading it through the Request: on Node a
// small body usually arrives with its head and sits parsed in the request's buffer (src/platform/node/held-body.ts).
// Elsewhere (Workers, a Request made in-process) there is none, and the body is read from the Request as usual.
import type { Context } from "hono";

/** The runtime's taker: the whole body when it holds all of the declared length and that is at most `limit` bytes. */
type HeldBody = (c: Context, limit: number) => Uint8Array | undefined;

let take: HeldBody | undefined;

const utf8 = new TextDecoder();
let decode: (bytes: Uint8Array) => string = (bytes) => utf8.decode(bytes);

/**
 * Set by the Node entry when its fast paths are on (server.directRelay); undefined turns it off. `asText`, the
 * runtime's own UTF-8 decoding of what it hands out, must read as TextDecoder's (a leading BOM dropped, bad sequences
 * replaced).
 */
export function takeHeldBodiesWith(fn: HeldBody | undefined, asText?: (bytes: Uint8Array) => string): void {
  take = fn;
  decode = fn && asText ? asText : (bytes) => utf8.decode(bytes);
}

/** A held body's text, decoded as TextDecoder would. */
export function heldBodyText(bytes: Uint8Array): string {
  return decode(bytes);
}

/**
 * The request's whole body when the runtime holds all of its declared Content-Length and that is at most `limit`
 * bytes; undefined (at once where no runtime holds bodies): read the Request.
 */
export function heldBody(c: Context, limit: number): Uint8Array | undefined {
  return take?.(c, limit);
}

/**
 * heldBody one turn later. On Node the chain starts as soon as the request's head is parsed, before the parser goes on
 * to a body that arrived in the same packet: a step that has not waited for anything yet finds no body held, and finds
 * it after one turn (the turn ends once the parser has pushed what it had). Undefined, at once where no runtime holds
 * bodies, when it still is not held whole. `heldBody(c, n) ?? (await heldBodyNextTurn(c, n))`.
 */
export async function heldBodyNextTurn(c: Context, limit: number): Promise<Uint8Array | undefined> {
  if (!take) return undefined;
  await undefined;
  return heldBody(c, limit);
}
