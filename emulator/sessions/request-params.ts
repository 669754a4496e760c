// Reading request bodies and query parameters of the session half, with 400s that name the field.
import type { Context } from "hono";
import { SessionError } from "./session-error.js";

/** The JSON body, which may be absent (→ undefined); anything that is not JSON is a 400. */
export async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new SessionError(400, "invalid_json", "Request body is not valid JSON");
  }
}

/** The JSON body as an object; an absent body is `{}`. */
export async function readJsonObject(c: Context): Promise<Record<string, any>> {
  const body = await readJson(c);
  if (body === undefined) return {};
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new SessionError(400, "invalid_params", "Request body must be a JSON object");
  return body as Record<string, any>;
}

export function pageParam(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new SessionError(400, "invalid_params", `${name} must be an integer from 1 to ${max}`);
  return n;
}

export function timestampParam(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new SessionError(400, "invalid_params", `${name} must be a timestamp in milliseconds`);
  return n;
}

/** Refuses a body whose declared length is over `max` before any of it is read (multipart bodies are buffered). */
export function limitDeclaredLength(c: Context, max: number, what: string): void {
  const declared = Number(c.req.header("content-length"));
  // Multipart framing adds a little around the file itself.
  if (Number.isFinite(declared) && declared > max + 64 * 1024)
    throw new SessionError(413, "payload_too_large", `${what} are limited to ${max} bytes`);
}
