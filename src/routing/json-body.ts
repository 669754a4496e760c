// The one JSON body reader: size bounded while streaming (Content-Length first, then a counting reader), nesting depth
// bounded before parsing, read once per request and shared by the chain (quota, meter, handler) through the context.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import { heldBody, heldBodyNextTurn, heldBodyText } from "../web/held-body.js";
import type { PlatformSpeed } from "../web/speed.js";
import { LRUCache } from "lru-cache";

/** Control-plane JSON bodies: a search or a creation needs kilobytes; this leaves room for schemas and long URL lists. */
const JSON_BODY_LIMIT = 1024 * 1024;
const JSON_MAX_DEPTH = 64;

/**
 * A request's JSON object body: its text, and the object it parses into. A text parsed into an object lately parses
 * the same again, so for it the object is made when a step first reads `json` (a cache hit's steps may read none).
 */
export class JsonBody {
  #json: Record<string, unknown> | undefined;

  constructor(
    readonly text: string,
    json?: Record<string, unknown>,
  ) {
    this.#json = json;
  }

  get json(): Record<string, unknown> {
    this.#json ??= parseJsonObject(this.text);
    return this.#json;
  }
}

/**
 * Texts that lately parsed into an object (bounded in count and bytes; small texts only): the same text parses the
 * same, depth check included, so a body seen again is parsed only when read. A pure function of the text: shared by
 * every gateway of the process.
 */
const PARSED = new LRUCache<string, true>({ max: 4096, maxSize: 4 * 1024 * 1024, sizeCalculation: (_v, k) => k.length + 64 });
const PARSED_MAX_CHARS = 4096;

declare module "hono" {
  interface ContextVariableMap {
    jsonBody: JsonBody;
    /** The route-table row's own JSON body limit, when it has one (`bodyLimit`). */
    bodyLimit: number;
  }
}

const incomplete = () => new GatewayError(400, "body_incomplete", "The request body ended before it was complete (the connection closed).");
export const tooLarge = (limit: number) =>
  new GatewayError(413, "body_too_large", `Request bodies on this route are limited to ${limit} bytes.`, { limit });

/** Reads the raw body as text, refusing (and cancelling the stream) as soon as it passes `limit` bytes. */
async function readBoundedText(req: Request, limit: number): Promise<string> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) {
    await req.body?.cancel().catch(() => {});
    throw tooLarge(limit);
  }
  // A declared length within the limit bounds what the HTTP parser will deliver: read it whole. (On Node this also
  // skips building a Web stream over the socket, which costs more than the rest of a cache hit.)
  if (declared !== null && /^\d+$/.test(declared)) {
    return req.text().catch(() => {
      throw incomplete();
    });
  }
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read().catch(() => {
      throw incomplete();
    });
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const ch of chunks) {
    all.set(ch, at);
    at += ch.byteLength;
  }
  return new TextDecoder().decode(all);
}

/** The body as text when the runtime already holds it whole, within `limit` (src/web/held-body.ts). */
function heldText(platform: PlatformSpeed, c: Context, limit: number): string | undefined {
  const bytes = heldBody(platform, c, limit);
  return bytes && heldBodyText(platform, bytes);
}

/** The same, one turn later (the request's first steps run before Node parses a body that came with the head). */
async function heldTextNextTurn(platform: PlatformSpeed, c: Context, limit: number): Promise<string | undefined> {
  const bytes = await heldBodyNextTurn(platform, c, limit);
  return bytes && heldBodyText(platform, bytes);
}

/** Deepest nesting of arrays and objects in a JSON text, counted without parsing (strings skipped). */
function jsonDepth(text: string, stopAt: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
      continue;
    }
    if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) {
      if (++depth > max) {
        max = depth;
        if (max > stopAt) return max;
      }
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return max;
}

/** Parses a JSON body with the limits above; an empty body is `{}`. */
function parseJson(text: string, what: string): unknown {
  if (!text.trim()) return {};
  // Nesting deeper than the limit takes more opening brackets than a text this short holds: no count needed.
  if (text.length > JSON_MAX_DEPTH && jsonDepth(text, JSON_MAX_DEPTH) > JSON_MAX_DEPTH) {
    throw new GatewayError(400, "invalid_json", `${what} nests deeper than ${JSON_MAX_DEPTH} levels.`, { maxDepth: JSON_MAX_DEPTH });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new GatewayError(400, "invalid_json", `${what} is not valid JSON.`);
  }
  return json;
}

/** Parses a JSON object body with the limits above; an empty body is `{}`. */
function parseJsonObject(text: string, what = "The request body"): Record<string, unknown> {
  const json = parseJson(text, what);
  if (!json || typeof json !== "object" || Array.isArray(json))
    throw new GatewayError(400, "invalid_json", `${what} must be a JSON object.`);
  return json as Record<string, unknown>;
}

/**
 * The request's JSON object body, read once (bounded) and kept on the context for the rest of the chain. `platform`:
 * the gateway's (services.platform), whose runtime may hold the body already.
 */
export async function jsonBody(
  c: Context<GatewayEnv>,
  platform: PlatformSpeed,
  limit = c.get("bodyLimit") ?? JSON_BODY_LIMIT,
): Promise<JsonBody> {
  return (
    jsonBodyNow(c, platform, limit) ??
    keepJsonBody(c, (await heldTextNextTurn(platform, c, limit)) ?? (await readBoundedText(c.req.raw, limit)))
  );
}

/**
 * The same body when it is there without waiting (kept by an earlier step, or held whole by the runtime), else
 * undefined. `jsonBodyNow(c, p) ?? (await jsonBody(c, p))` spares a hot step a promise and a turn; errors are the same.
 */
export function jsonBodyNow(
  c: Context<GatewayEnv>,
  platform: PlatformSpeed,
  limit = c.get("bodyLimit") ?? JSON_BODY_LIMIT,
): JsonBody | undefined {
  const kept = c.get("jsonBody");
  if (kept) return kept;
  const text = heldText(platform, c, limit);
  return text === undefined ? undefined : keepJsonBody(c, text);
}

function keepJsonBody(c: Context<GatewayEnv>, text: string): JsonBody {
  let body: JsonBody;
  if (text.length > PARSED_MAX_CHARS) body = new JsonBody(text, parseJsonObject(text));
  else if (PARSED.get(text)) body = new JsonBody(text);
  else {
    body = new JsonBody(text, parseJsonObject(text));
    PARSED.set(text, true);
  }
  c.set("jsonBody", body);
  return body;
}

/** A JSON body of any shape (the admin API takes arrays too), read with the same limits and errors; not kept. */
export async function jsonValue(c: Context<GatewayEnv>, platform: PlatformSpeed, limit = JSON_BODY_LIMIT): Promise<unknown> {
  const held = heldText(platform, c, limit) ?? (await heldTextNextTurn(platform, c, limit));
  return parseJson(held ?? (await readBoundedText(c.req.raw, limit)), "The request body");
}

/** Replaces the body the chain forwards (a quota filled in defaults, a meter fixed a timeout). */
export function setJsonBody(c: Context<GatewayEnv>, json: Record<string, unknown>): JsonBody {
  const body = new JsonBody(JSON.stringify(json), json);
  c.set("jsonBody", body);
  return body;
}
