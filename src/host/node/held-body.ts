// A small request body node:http has already parsed, taken as it sits in the request's buffer. The whole message often
// arrives in the packet that carries its head; one turn after the head (the Node entry waits it, bodyFollowsHead), the
// parser has pushed all of it: the declared Content-Length is buffered (the parser never pushes past a message's end).
// Read through node-server's Request instead, it costs the stream's listeners, a resume and its ticks, a promise, and
// a copy into a new ArrayBuffer; here it is one read of what is there.
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

/**
 * The request node:http parsed, when `c` is that request: node-server's env carries the client's `outgoing` with it.
 * A subrequest the gateway dispatches in-process keeps the client's `incoming` but not `outgoing`: its headers and
 * body are its own, not that `incoming`'s.
 */
export function parsedIncoming(c: Context): IncomingMessage | undefined {
  const env = c.env as { incoming?: IncomingMessage; outgoing?: unknown } | undefined;
  return env?.outgoing === undefined ? undefined : env.incoming;
}

/**
 * The request's body when exactly its declared length is buffered, at most `limit` bytes, untouched by any reader;
 * otherwise undefined (the caller reads it the usual way). What it hands out is kept as the request's raw body, which
 * node-server answers any later read of the body with (its `rawBody` fast path), so a second reader sees the same
 * bytes. The length is read from the head node:http parsed (its parser refuses a Content-Length that is not digits,
 * and two that differ), not through the Request's headers.
 */
export function nodeHeldBody(c: Context, limit: number): Uint8Array | undefined {
  const incoming = parsedIncoming(c) as (IncomingMessage & { rawBody?: Buffer }) | undefined;
  if (!incoming || incoming.readableDidRead || incoming.rawBody !== undefined) return undefined;
  const declared = incoming.headers["content-length"];
  if (declared === undefined) return undefined;
  const length = Number(declared);
  if (!Number.isSafeInteger(length) || length < 0 || length > limit || incoming.readableLength !== length) return undefined;
  const bytes: Buffer | null = length === 0 ? Buffer.alloc(0) : incoming.read(length);
  if (!bytes || bytes.length !== length) return undefined;
  incoming.rawBody = bytes;
  // The parser marks the message complete a little later (after this turn's I/O): flowing, the stream then ends on
  // its own ('end', which node-server waits for before it lets the request go, and no drain of it afterwards).
  incoming.resume();
  return bytes;
}

/**
 * A request whose head declares a body node:http has not finished reading. Node calls the server with the head before
 * its parser goes on to a body that came in the same packet, and pushes that body once the call returns: the Node
 * entry waits one turn for such a request, and the chain's body steps find its body held whole, with no turn of their
 * own (a body still on its way is then read the usual way).
 */
export function bodyFollowsHead(incoming: IncomingMessage): boolean {
  // Not asked of a GET, HEAD or OPTIONS (which the chain reads no body of): node builds its header object when first
  // read, and a request nothing else asks a header of would pay for it here.
  const m = incoming.method;
  if (m === "GET" || m === "HEAD" || m === "OPTIONS") return false;
  const declared = incoming.headers["content-length"];
  return declared !== undefined && declared !== "0" && !incoming.complete;
}

/**
 * True when the request's whole body was taken here: the message is in, though node:http may not have marked it
 * `complete` yet (an answer given now is no early answer, and the connection stays open; ./closing.ts).
 */
export function bodyTakenWhole(incoming: IncomingMessage): boolean {
  return (incoming as IncomingMessage & { rawBody?: Buffer }).rawBody !== undefined;
}

/**
 * A held body's text as TextDecoder reads it (a leading BOM dropped; bad sequences become U+FFFD, as Buffer's decoding
 * does too), without its per-call checks: the body is a Buffer here.
 */
export function nodeHeldText(bytes: Uint8Array): string {
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bom = b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf;
  return b.toString("utf8", bom ? 3 : 0);
}
