// The few request headers the chain reads on every request of its hot rows. Through node-server's Request, each read
// validates and lower-cases the name, looks it up, normalises and checks the value: on Node, where its parser has
// already joined (or refused twice) these names as Fetch's `Headers` would, they are read off its parsed head instead
// (the gateway's platform.hotHeader, src/web/speed.ts). Elsewhere (Workers, a subrequest made in-process) they are
// read through the Request, as every other header is.
import type { Context } from "hono";
import type { HotHeader, PlatformSpeed } from "./speed.js";

/** The request header `name` as `c.req.header(name)` reads it. */
export function hotHeader(platform: PlatformSpeed, c: Context, name: HotHeader): string | undefined {
  const read = platform.hotHeader;
  return read ? read(c, name) : c.req.header(name);
}

export type { HotHeader } from "./speed.js";
