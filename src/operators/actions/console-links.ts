// Console sign-in links, an operator action: an operator's CLI (`tollgate console link`) asks the admin API
// (../http/admin/console-links.ts) for a one-time code; the URL carries the code (never a key) in its query, which the
// access log does not record. The code lives at most fifteen minutes in shared state, only as its hash, and the first
// redemption on any instance uses it up. The console's link page and the OAuth consent page redeem it; each is bound to
// the key that minted it (the session or grant it opens dies with that key).
import type { GatewayServices } from "../../services.js";
import { hashTenantKey } from "../../identity/tenants.js";
import { CONSOLE_PATH, randomToken } from "../../identity/console-session.js";
import type { Actor } from "./actor.js";
import { audit } from "./tenant-changes.js";

const LINK_TTL_DEFAULT_S = 300;
/** The longest a code may live (consoleLinkBody's bound); a used code's marker is kept this long. */
const LINK_TTL_MAX_S = 900;

export interface LinkRecord {
  tenant: string;
  /** Hash of the key that minted the link: the session it opens ends when that key does. */
  keyHash: string;
}

const codeKey = (digest: string) => `console:link:${digest}`;
const usedKey = (digest: string) => `console:link-used:${digest}`;
const digestOf = async (code: string) => (await hashTenantKey(code)).slice("sha256:".length);
const CODE_SHAPE = /^[A-Za-z0-9_-]{40,64}$/;

/** A one-time sign-in URL for `tenant`, bound to the key it presented (`presentedKey`), audited under `by`. */
export async function createConsoleLink(
  services: GatewayServices,
  by: Actor,
  link: { tenant: string; presentedKey: string; ttlSeconds?: number; origin: string },
): Promise<{ url: string; expiresAt: string }> {
  const ttlSeconds = link.ttlSeconds ?? LINK_TTL_DEFAULT_S;
  const code = randomToken();
  const record: LinkRecord = { tenant: link.tenant, keyHash: await hashTenantKey(link.presentedKey) };
  await services.stores.kv.set(codeKey(await digestOf(code)), JSON.stringify(record), ttlSeconds * 1000);
  const expiresAt = new Date(services.now() + ttlSeconds * 1000).toISOString();
  await audit(services, by, "console.link.create", `tenant:${link.tenant}`, undefined, { expiresAt });
  return { url: `${link.origin}${CONSOLE_PATH}/link?code=${code}`, expiresAt };
}

/** The link's tenant without using it up (the confirmation page names who will be signed in). */
export async function peekLink(services: GatewayServices, code: string): Promise<LinkRecord | undefined> {
  if (!CODE_SHAPE.test(code)) return undefined;
  const raw = await services.stores.kv.get(codeKey(await digestOf(code)));
  return raw ? (JSON.parse(raw) as LinkRecord) : undefined;
}

/** Uses the code up: of several redemptions (on any instance) only the first gets its record. */
export async function redeemLink(services: GatewayServices, code: string): Promise<LinkRecord | undefined> {
  if (!CODE_SHAPE.test(code)) return undefined;
  const digest = await digestOf(code);
  const raw = await services.stores.kv.get(codeKey(digest));
  if (!raw) return undefined;
  if (!(await services.stores.kv.setIfAbsent(usedKey(digest), "1", LINK_TTL_MAX_S * 1000))) return undefined;
  await services.stores.kv.delete(codeKey(digest));
  return JSON.parse(raw) as LinkRecord;
}
