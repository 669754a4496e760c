// src/web/request-headers.ts's reader on Node: the value node:http parsed, for the request it parsed.
import { IncomingMessage } from "node:http";
import type { Context } from "hono";
import type { HotHeader } from "../../web/speed.js";
import { parsedIncoming } from "./held-body.js";

/** The header off node:http's parsed head for the request it parsed; anything else (a subrequest, HTTP/2) through the Request. */
export function nodeHotHeader(c: Context, name: HotHeader): string | undefined {
  const incoming = parsedIncoming(c);
  return incoming instanceof IncomingMessage ? (incoming.headers[name] as string | undefined) : c.req.header(name);
}
