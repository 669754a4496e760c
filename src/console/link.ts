// Console sign-in links: an operator's CLI (`tollgate console link`) asks the admin API for a one-time code; the URL it
// prints carries the code (never a key) in its query, which the access log does not record. The code lives five
// minutes in shared state, only as its hash, and the first exchange on any instance uses it up.
import type { GatewayServices } from "../services.js";
import { GatewayError } from "../errors.js";
import { hashTenantKey } from "../identity/tenants.js";
import type { Handlers } from "../routing/handlers.js";
import { publicOriginOf } from "../web/public-origin.js";
import { audit } from "../operators/actions/tenant-changes.js";
import { validBody } from "../operators/http/admin/validate.js";
import { actorOf } from "../operators/http/actor.js";
import { consoleLinkBody } from "../routing/admin-schemas.js";
import { CONSOLE_PATH, randomToken } from "../identity/console-session.js";

const LINK_TTL_DEFAULT_S = 300;
/** The longest a code may live (consoleLinkBody's bound); a used code's marker is kept this long. */
const LINK_TTL_MAX_S = 900;

interface LinkRecord {
  tenant: string;
  /** Hash of the key that minted the link: the session it opens ends when that key does. */
  keyHash: string;
}

const codeKey = (digest: string) => `console:link:${digest}`;
const usedKey = (digest: string) => `console:link-used:${digest}`;
const digestOf = async (code: string) => (await hashTenantKey(code)).slice("sha256:".length);
const CODE_SHAPE = /^[A-Za-z0-9_-]{40,64}$/;

/** POST /_tollgate/admin/console-links: a one-time sign-in URL for the calling operator (admin or operator-readonly). */
export function consoleLinkHandlers(services: GatewayServices): Handlers {
  return {
    "admin.consoleLink": async (c) => {
      const body = await validBody(c, services.platform, consoleLinkBody);
      const caller = c.get("caller");
      if (caller.via !== "key")
        throw new GatewayError(
          400,
          "key_required",
          "A console link is made with an operator key; people with an identity provider sign in to the console directly.",
        );
      const tenant = caller.tenant;
      const ttlSeconds = body.ttlSeconds ?? LINK_TTL_DEFAULT_S;
      const code = randomToken();
      const record: LinkRecord = { tenant: tenant.id, keyHash: await hashTenantKey(caller.presented) };
      await services.stores.kv.set(codeKey(await digestOf(code)), JSON.stringify(record), ttlSeconds * 1000);
      const expiresAt = new Date(services.now() + ttlSeconds * 1000).toISOString();
      await audit(services, actorOf(c), "console.link.create", `tenant:${tenant.id}`, undefined, { expiresAt });
      const url = `${publicOriginOf(c, services)}${CONSOLE_PATH}/link?code=${code}`;
      return c.json({ url, expiresAt }, 201);
    },
  };
}

/** The link's tenant without using it up (the confirmation page names who will be signed in). */
export async function peekLink(services: GatewayServices, code: string): Promise<LinkRecord | undefined> {
  if (!CODE_SHAPE.test(code)) return undefined;
  const raw = await services.stores.kv.get(codeKey(await digestOf(code)));
  return raw ? (JSON.parse(raw) as LinkRecord) : undefined;
}

/** Uses the code up: of several exchanges (on any instance) only the first gets its record. */
export async function redeemLink(services: GatewayServices, code: string): Promise<LinkRecord | undefined> {
  if (!CODE_SHAPE.test(code)) return undefined;
  const digest = await digestOf(code);
  const raw = await services.stores.kv.get(codeKey(digest));
  if (!raw) return undefined;
  if (!(await services.stores.kv.setIfAbsent(usedKey(digest), "1", LINK_TTL_MAX_S * 1000))) return undefined;
  await services.stores.kv.delete(codeKey(digest));
  return JSON.parse(raw) as LinkRecord;
}
