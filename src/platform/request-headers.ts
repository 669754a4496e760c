// The few request headers the chain reads on every request of its hot rows. Through node-server's Request, each read
// validates and lower-cases the name, looks it up, normalises and checks the value: on Node, where its parser has
// already joined (or refused twice) these names as Fetch's `Headers` would, they are read off its parsed head instead.
// Elsewhere (Workers, a subrequest made in-process) they are read through the Request, as every other header is.
import type { Context } from "hono";

/**
 * Names node:http joins as `Headers.get` does (repeats joined with ", ", value trimmed), or refuses to see twice
 * (Content-Length). Not `authorization`: node keeps the first of two, where `Headers` joins them.
 */
export type HotHeader = "content-length" | "x-api-key" | "cache-control" | "idempotency-key";

let read: ((c: Context, name: HotHeader) => string | undefined) | undefined;

/** Set by the Node entry (src/platform/node/request-headers.ts); undefined reads through the Request. */
export function readHotHeadersWith(reader: typeof read): void {
  read = reader;
}

/** The request header `name` as `c.req.header(name)` reads it. */
export function hotHeader(c: Context, name: HotHeader): string | undefined {
  return read ? read(c, name) : c.req.header(name);
}
