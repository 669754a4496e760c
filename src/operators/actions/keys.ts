// A tenant's keys as operators manage them (the admin API and the console alike): create (the plain key is in that one
// answer and nowhere else), rotate, revoke, expire; and the limits on a tenant managing its own keys in the console.
import type * as z from "zod";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { generateTenantKey, hashTenantKey, keyIdOf, type Tenant } from "../../identity/tenants.js";
import type { keyCreateBody, keyExpireBody, keyRotateBody } from "../../routing/admin-schemas.js";
import type { Actor } from "./actor.js";
import { changeTenant } from "./tenant-changes.js";

type KeyEntry = Tenant["keys"][number];

/** A new key: its stored entry (hash only) and the one-off answer carrying the plain key. */
export async function issueKey(label: string | undefined, expiresAt: string | undefined, now: number) {
  const key = generateTenantKey();
  const entry: KeyEntry = {
    hash: await hashTenantKey(key),
    ...(label ? { label } : {}),
    ...(expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {}),
    createdAt: new Date(now).toISOString(),
  };
  return {
    entry,
    view: (tenant: string) => ({
      key,
      id: keyIdOf(entry.hash),
      tenant,
      ...(entry.label ? { label: entry.label } : {}),
      ...(entry.expiresAt ? { expiresAt: entry.expiresAt } : {}),
      createdAt: entry.createdAt!,
    }),
  };
}

function findKey(t: Tenant, keyId: string): KeyEntry {
  const k = t.keys.find((k) => keyIdOf(k.hash) === keyId);
  if (!k) throw new GatewayError(404, "key_not_found", `Tenant "${t.id}" has no key "${keyId}".`);
  return k;
}

export async function createKey(services: GatewayServices, by: Actor, id: string, body: z.infer<typeof keyCreateBody>) {
  const issued = await issueKey(body.label, body.expiresAt, services.now());
  await changeTenant(services, by, id, { action: "key.create", target: `key:${id}/${keyIdOf(issued.entry.hash)}` }, (t) => ({
    ...t,
    keys: [...t.keys, issued.entry],
  }));
  return issued.view(id);
}

/** A new key in place of `keyId`; the old one keeps working `graceSeconds` more (0: it stops at once). */
export async function rotateKey(services: GatewayServices, by: Actor, id: string, keyId: string, body: z.infer<typeof keyRotateBody>) {
  let oldExpiresAt = "";
  const issued = await issueKey(body.label, body.expiresAt, services.now());
  await changeTenant(services, by, id, { action: "key.rotate", target: `key:${id}/${keyId}` }, (t) => {
    const old = findKey(t, keyId);
    issued.entry.label ??= old.label;
    // A rotation does not extend a key's life: the new key ends no later than the old one would have.
    if (old.expiresAt && (!issued.entry.expiresAt || Date.parse(issued.entry.expiresAt) > Date.parse(old.expiresAt)))
      issued.entry.expiresAt = old.expiresAt;
    oldExpiresAt = new Date(services.now() + body.graceSeconds * 1000).toISOString();
    if (old.expiresAt && Date.parse(old.expiresAt) < Date.parse(oldExpiresAt)) oldExpiresAt = old.expiresAt;
    const keys =
      body.graceSeconds > 0 ? t.keys.map((k) => (k === old ? { ...k, expiresAt: oldExpiresAt } : k)) : t.keys.filter((k) => k !== old);
    return { ...t, keys: [...keys, issued.entry] };
  });
  return { ...issued.view(id), replaced: keyId, replacedExpiresAt: oldExpiresAt };
}

export async function revokeKey(services: GatewayServices, by: Actor, id: string, keyId: string) {
  await changeTenant(services, by, id, { action: "key.revoke", target: `key:${id}/${keyId}` }, (t) => {
    const old = findKey(t, keyId);
    return { ...t, keys: t.keys.filter((k) => k !== old) };
  });
  return { tenant: id, revoked: keyId };
}

export async function expireKey(services: GatewayServices, by: Actor, id: string, keyId: string, body: z.infer<typeof keyExpireBody>) {
  const expiresAt = new Date(body.expiresAt).toISOString();
  await changeTenant(services, by, id, { action: "key.expire", target: `key:${id}/${keyId}` }, (t) => {
    const old = findKey(t, keyId);
    return { ...t, keys: t.keys.map((k) => (k === old ? { ...k, expiresAt } : k)) };
  });
  return { tenant: id, id: keyId, expiresAt };
}

/** Keys a tenant may hold when it creates them itself (an admin is not bound by it). */
const SELF_SERVICE_KEYS = 20;

/** A tenant creating a key of its own: refused (409) once it holds SELF_SERVICE_KEYS. */
export function refuseSelfServiceKey(tenant: Tenant): void {
  if (tenant.keys.length >= SELF_SERVICE_KEYS)
    throw new GatewayError(409, "too_many_keys", `A tenant holds at most ${SELF_SERVICE_KEYS} keys of its own making; revoke one first.`);
}

/** A tenant managing itself keeps one live key (an admin is held to the fleet's last admin key instead): 409 otherwise. */
export function refuseLastOwnKey(tenant: Tenant, keyId: string, now: number): void {
  const others = tenant.keys.filter((k) => keyIdOf(k.hash) !== keyId && (!k.expiresAt || Date.parse(k.expiresAt) > now));
  if (!others.length) throw new GatewayError(409, "last_key", "This is your last live key; create another before revoking it.");
}
