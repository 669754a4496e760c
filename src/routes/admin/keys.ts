// Admin API: a tenant's keys — create (the plain key is in that one answer and nowhere else), rotate, revoke, expire.
import { Hono } from "hono";
import type { GatewayEnv } from "../../context.js";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { changeTenant } from "../../operators/tenant-changes.js";
import { generateTenantKey, hashTenantKey, keyIdOf, type Tenant } from "../../tenants.js";
import { keyCreateBody, keyExpireBody, keyRotateBody } from "./schemas.js";
import { validBody } from "./validate.js";

type KeyEntry = Tenant["keys"][number];

/** A new key: its stored entry (hash only) and the one-off answer carrying the plain key. */
export async function issueKey(label?: string, expiresAt?: string) {
  const key = generateTenantKey();
  const entry: KeyEntry = {
    hash: await hashTenantKey(key),
    ...(label ? { label } : {}),
    ...(expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {}),
  };
  return {
    entry,
    view: (tenant: string) => ({
      key,
      id: keyIdOf(entry.hash),
      tenant,
      ...(entry.label ? { label: entry.label } : {}),
      ...(entry.expiresAt ? { expiresAt: entry.expiresAt } : {}),
    }),
  };
}

function findKey(t: Tenant, keyId: string): KeyEntry {
  const k = t.keys.find((k) => keyIdOf(k.hash) === keyId);
  if (!k) throw new GatewayError(404, "key_not_found", `Tenant "${t.id}" has no key "${keyId}".`);
  return k;
}

export function keyAdminRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();

  app.post("/tenants/:id/keys", async (c) => {
    const id = c.req.param("id");
    const body = await validBody(c, keyCreateBody);
    const issued = await issueKey(body.label, body.expiresAt);
    await changeTenant(services, c, id, { action: "key.create", target: `key:${id}/${keyIdOf(issued.entry.hash)}` }, (t) => ({
      ...t,
      keys: [...t.keys, issued.entry],
    }));
    return c.json(issued.view(id), 201);
  });

  app.post("/tenants/:id/keys/:keyId/rotate", async (c) => {
    const { id, keyId } = c.req.param();
    const body = await validBody(c, keyRotateBody);
    let oldExpiresAt = "";
    const issued = await issueKey(body.label);
    await changeTenant(services, c, id, { action: "key.rotate", target: `key:${id}/${keyId}` }, (t) => {
      const old = findKey(t, keyId);
      issued.entry.label ??= old.label;
      if (old.expiresAt) issued.entry.expiresAt = old.expiresAt; // a rotation does not extend a key's life
      oldExpiresAt = new Date(services.now() + body.graceSeconds * 1000).toISOString();
      const keys =
        body.graceSeconds > 0 ? t.keys.map((k) => (k === old ? { ...k, expiresAt: oldExpiresAt } : k)) : t.keys.filter((k) => k !== old);
      return { ...t, keys: [...keys, issued.entry] };
    });
    return c.json({ ...issued.view(id), replaced: keyId, replacedExpiresAt: oldExpiresAt }, 201);
  });

  app.delete("/tenants/:id/keys/:keyId", async (c) => {
    const { id, keyId } = c.req.param();
    await changeTenant(services, c, id, { action: "key.revoke", target: `key:${id}/${keyId}` }, (t) => {
      const old = findKey(t, keyId);
      return { ...t, keys: t.keys.filter((k) => k !== old) };
    });
    return c.json({ tenant: id, revoked: keyId });
  });

  app.post("/tenants/:id/keys/:keyId/expire", async (c) => {
    const { id, keyId } = c.req.param();
    const expiresAt = new Date((await validBody(c, keyExpireBody)).expiresAt).toISOString();
    await changeTenant(services, c, id, { action: "key.expire", target: `key:${id}/${keyId}` }, (t) => {
      const old = findKey(t, keyId);
      return { ...t, keys: t.keys.map((k) => (k === old ? { ...k, expiresAt } : k)) };
    });
    return c.json({ tenant: id, id: keyId, expiresAt });
  });
  return app;
}
