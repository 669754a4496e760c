// Console sign-in: a key is checked once, then a random session id in an HttpOnly, SameSite=Strict cookie stands for
// it. The server-side record (shared state, so every instance knows it) holds the tenant id, the form token and the
// expiry — never the key.
import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import type { GatewayServices } from "../services.js";
import { publicOriginOf } from "../web/public-origin.js";
import type { SignedInIdentity } from "./sign-in.js";

export const CONSOLE_PATH = "/_tollgate/console";
export const SESSION_COOKIE = "tollgate_console";
/** A console session lasts this long from sign-in. */
const SESSION_TTL_MS = 8 * 3600_000;

export interface ConsoleSession {
  id: string;
  tenant: string;
  /** Hash of the key signed in with (not the key): the session ends when that key is revoked or expires. "" for a provider's sign-in. */
  keyHash: string;
  /** Signed in through the identity provider (or Cloudflare Access): the subject and role, not a key. */
  identity?: SignedInIdentity;
  /** Echoed in every form as `_csrf`; a post without it is refused even from the same origin. */
  csrf: string;
  expiresAt: number;
}

const storeKey = (id: string) => `console:session:${id}`;
export const randomToken = () => {
  let bin = "";
  for (const b of crypto.getRandomValues(new Uint8Array(32))) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};

/** Secure when the page is served over https: directly, behind a trusted TLS proxy, or as the public origin says. */
function secureCookie(c: Context, services: GatewayServices): boolean {
  if (new URL(c.req.url).protocol === "https:") return true;
  try {
    return publicOriginOf(c, services).startsWith("https:");
  } catch {
    return false;
  }
}

export async function startSession(
  services: GatewayServices,
  c: Context,
  tenant: string,
  keyHash: string,
  identity?: SignedInIdentity,
): Promise<ConsoleSession> {
  const session: ConsoleSession = {
    id: randomToken(),
    tenant,
    keyHash,
    ...(identity ? { identity } : {}),
    csrf: randomToken(),
    expiresAt: services.now() + SESSION_TTL_MS,
  };
  const { id: _id, ...record } = session;
  await services.stores.kv.set(storeKey(session.id), JSON.stringify(record), SESSION_TTL_MS);
  setCookie(c, SESSION_COOKIE, session.id, {
    path: CONSOLE_PATH,
    httpOnly: true,
    sameSite: "Strict",
    secure: secureCookie(c, services),
    maxAge: Math.floor(SESSION_TTL_MS / 1000),
  });
  return session;
}

/** The live session of this id (the console's cookie value, read by middleware/identify), if any. */
export async function sessionById(services: Pick<GatewayServices, "stores" | "now">, id: string): Promise<ConsoleSession | undefined> {
  const raw = await services.stores.kv.get(storeKey(id));
  if (!raw) return undefined;
  const rec = JSON.parse(raw) as Omit<ConsoleSession, "id">;
  if (rec.expiresAt <= services.now()) return undefined;
  return { id, ...rec };
}

export async function endSession(services: GatewayServices, c: Context, session: ConsoleSession | undefined): Promise<void> {
  if (session) await services.stores.kv.delete(storeKey(session.id));
  deleteCookie(c, SESSION_COOKIE, { path: CONSOLE_PATH });
}

/** Compares the form's token with the session's in constant time. */
export function validFormToken(session: ConsoleSession, token: unknown): boolean {
  if (typeof token !== "string" || token.length !== session.csrf.length) return false;
  let diff = 0;
  for (let i = 0; i < token.length; i++) diff |= token.charCodeAt(i) ^ session.csrf.charCodeAt(i);
  return diff === 0;
}
