// src/platform/request-headers.ts's reader on Node: the value node:http parsed, for the request it parsed.
import { IncomingMessage, type ServerResponse } from "node:http";
import type { Context } from "hono";
import type { HotHeader } from "../request-headers.js";

/**
 * The header off node:http's parsed head when the request is the one it parsed: node-server's env carries the client's
 * `outgoing` (a subrequest the gateway dispatches in-process keeps `incoming` but not `outgoing`, and has headers of
 * its own). Anything else (HTTP/2, no env) reads through the Request.
 */
export function nodeHotHeader(c: Context, name: HotHeader): string | undefined {
  const env = c.env as { incoming?: unknown; outgoing?: ServerResponse } | undefined;
  const incoming = env?.incoming;
  if (env?.outgoing === undefined || !(incoming instanceof IncomingMessage)) return c.req.header(name);
  return incoming.headers[name] as string | undefined;
}
