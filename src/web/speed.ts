// The runtime's speed helpers, chosen per gateway by its entry and handed to it (GatewayDeps.platform, then
// services.platform): never stored in a module, so two gateways in one process each keep their own (issue 41). On
// Node with its fast paths on (server.directRelay), the Node entry provides readers and a writer that skip building
// Fetch objects (src/host/node/); elsewhere (Workers, the standard path) they are left out and headers and bodies
// are read and set through the Request and Response, as Hono's API does. Only the files the boundary lint lists
// (.dependency-cruiser.cjs, "speed-helpers-fenced") use them; everything else uses Hono's API.
import type { Context } from "hono";

/**
 * Names node:http joins as `Headers.get` does (repeats joined with ", ", value trimmed), or refuses to see twice
 * (Content-Length). Not `authorization`: node keeps the first of two, where `Headers` joins them.
 */
export type HotHeader = "content-length" | "x-api-key" | "cache-control" | "idempotency-key";

export interface PlatformSpeed {
  /** Reads a hot request header as `c.req.header(name)` would (src/web/request-headers.ts). */
  readonly hotHeader?: (c: Context, name: HotHeader) => string | undefined;
  /**
   * The whole body when the runtime holds all of the declared length and that is at most `limit` bytes
   * (src/web/held-body.ts); `heldText` decodes what it hands out as TextDecoder would (a leading BOM dropped, bad
   * sequences replaced).
   */
  readonly heldBody?: (c: Context, limit: number) => Uint8Array | undefined;
  readonly heldText?: (bytes: Uint8Array) => string;
  /**
   * Adds a header to an answer whose headers nobody read yet, without building them; false: set it the usual way
   * (src/web/response-headers.ts). Set by the Node entry once its server runs (the adapter's Response is then the
   * global one).
   */
  writeUnread?: (res: Response, name: string, value: string) => boolean;
}

/** The Web default: no helper, everything through the Request and Response (the Worker entry's, and tests'). */
export const webPlatform: PlatformSpeed = Object.freeze({});
