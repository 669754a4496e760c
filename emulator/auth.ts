// Control-plane API-key check shared by every emulator module, as the real service does it.
import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "node:crypto";
import type { EmulatorContext } from "./types.js";

export function presentedApiKey(headers: Headers): string | undefined {
  const key = headers.get("x-api-key");
  if (key) return key;
  const auth = headers.get("authorization");
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, "").trim();
  return undefined;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Refuses control-plane calls without the emulator's API key: 401 `{message, code}`. */
export function requireApiKey(ctx: EmulatorContext): MiddlewareHandler {
  return async function requireApiKey(c, next) {
    const key = presentedApiKey(c.req.raw.headers);
    if (!key || !(ctx.accounts ? ctx.accounts.byKey(key) : same(key, ctx.apiKey))) {
      return c.json({ message: key ? "Invalid API key" : "Missing API key", code: "unauthorized" }, 401);
    }
    await next();
  };
}
