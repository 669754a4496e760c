// Admin API: a tenant's keys — create (the plain key is in that one answer and nowhere else), rotate, revoke, expire.
// The console makes the same changes through the same functions (src/console/routes.tsx).
import type { Context } from "hono";
import type * as z from "zod";
import type { GatewayEnv } from "../../context.js";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { changeTenant } from "../tenant-changes.js";
import { generateTenantKey, hashTenantKey, keyIdOf, type Tenant } from "../../identity/tenants.js";
import { keyCreateBody, keyExpireBody, keyRotateBody } from "./schemas.js";
import { validBody } from "./validate.js";
import type { Handlers } from "../../routing/handlers.js";

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

type Ctx = Context<GatewayEnv>;

export async function createKey(services: GatewayServices, c: Ctx, id: string, body: z.infer<typeof keyCreateBody>) {
  const issued = await issueKey(body.label, body.expiresAt, services.now());
  await changeTenant(services, c, id, { action: "key.create", target: `key:${id}/${keyIdOf(issued.entry.hash)}` }, (t) => ({
    ...t,
    keys: [...t.keys, issued.entry],
  }));
  return issued.view(id);
}

/** A new key in place of `keyId`; the old one keeps working `graceSeconds` more (0: it stops at once). */
export async function rotateKey(services: GatewayServices, c: Ctx, id: string, keyId: string, body: z.infer<typeof keyRotateBody>) {
  let oldExpiresAt = "";
  const issued = await issueKey(body.label, body.expiresAt, services.now());
  await changeTenant(services, c, id, { action: "key.rotate", target: `key:${id}/${keyId}` }, (t) => {
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

export async function revokeKey(services: GatewayServices, c: Ctx, id: string, keyId: string) {
  await changeTenant(services, c, id, { action: "key.revoke", target: `key:${id}/${keyId}` }, (t) => {
    const old = findKey(t, keyId);
    return { ...t, keys: t.keys.filter((k) => k !== old) };
  });
  return { tenant: id, revoked: keyId };
}

async function expireKey(services: GatewayServices, c: Ctx, id: string, keyId: string, body: z.infer<typeof keyExpireBody>) {
  const expiresAt = new Date(body.expiresAt).toISOString();
  await changeTenant(services, c, id, { action: "key.expire", target: `key:${id}/${keyId}` }, (t) => {
    const old = findKey(t, keyId);
    return { ...t, keys: t.keys.map((k) => (k === old ? { ...k, expiresAt } : k)) };
  });
  return { tenant: id, id: keyId, expiresAt };
}

/** The key rows of the admin API (src/routing/own-rows.ts); the chain has checked the operator caller. */
export function keyAdminHandlers(services: GatewayServices): Handlers {
  const p = (c: Ctx, name: string) => c.req.param(name) ?? "";
  return {
    "admin.keys.create": async (c) =>
      c.json(await createKey(services, c, p(c, "id"), await validBody(c, services.platform, keyCreateBody)), 201),
    "admin.keys.rotate": async (c) =>
      c.json(await rotateKey(services, c, p(c, "id"), p(c, "keyId"), await validBody(c, services.platform, keyRotateBody)), 201),
    "admin.keys.revoke": async (c) => c.json(await revokeKey(services, c, p(c, "id"), p(c, "keyId"))),
    "admin.keys.expire": async (c) =>
      c.json(await expireKey(services, c, p(c, "id"), p(c, "keyId"), await validBody(c, services.platform, keyExpireBody))),
  };
}
