/** @jsxImportSource hono/jsx */
// The console's keys: every visible tenant's keys and their last use; create, rotate and revoke through
// ../../operators/actions/keys.ts as the admin API does, with the limits on a tenant managing its own keys there too.
import type { GatewayServices } from "../../services.js";
import { lastUsed } from "../../identity/key-usage.js";
import { createKey, refuseLastOwnKey, refuseSelfServiceKey, revokeKey, rotateKey } from "../../operators/actions/keys.js";
import { keyCreateBody, keyRotateBody } from "../../routing/admin-schemas.js";
import { href } from "../pages/layout.js";
import { KeysPage } from "../pages/lists.js";
import {
  actor,
  type C,
  field,
  formOf,
  formValue,
  keyTenant,
  numberField,
  type Pages,
  param,
  render,
  visibleTenants,
  withoutUndefined,
} from "../kit.js";

/** Tenants per page of the keys page (each with all its keys). */
const KEY_TENANTS_PER_PAGE = 10;

export function keyPages(services: GatewayServices): Pages {
  async function keysPage(c: C, issued?: Parameters<typeof KeysPage>[0]["issued"], status: 200 | 201 = 200) {
    const revoked = c.req.query("revoked");
    const notice = revoked && /^[0-9a-f]{16}$/.test(revoked) ? `Revoked key ${revoked}.` : undefined;
    const visible = visibleTenants(services, c);
    // One tenant (the one just changed, or the one asked for), or a page of tenants: never every key of every tenant.
    const only = issued?.tenant ?? c.req.query("tenant");
    const page = only ? 1 : Math.max(1, Math.floor(Number(c.req.query("page"))) || 1);
    const matching = only ? visible.filter((t) => t.id === only) : visible;
    const pages = Math.max(1, Math.ceil(matching.length / KEY_TENANTS_PER_PAGE));
    const tenants = matching.slice((page - 1) * KEY_TENANTS_PER_PAGE, page * KEY_TENANTS_PER_PAGE);
    const used = await lastUsed(
      services,
      tenants.flatMap((t) => t.keys.map((k) => k.hash)),
    );
    return render(
      c,
      <KeysPage
        viewer={c.get("viewer")}
        nonce={c.get("nonce")}
        tenants={tenants}
        lastUsed={used}
        now={services.now()}
        notice={notice}
        issued={issued}
        paging={{ page, pages, tenantCount: matching.length, perPage: KEY_TENANTS_PER_PAGE, only, all: visible.map((t) => t.id) }}
      />,
      status,
    );
  }

  return {
    "console.keys": (c) => keysPage(c),

    "console.keys.create": async (c) => {
      const tenant = keyTenant(services, c, param(c, "id"));
      const id = tenant.id;
      if (!c.get("viewer").canEdit) refuseSelfServiceKey(tenant);
      const form = await formOf(c);
      const body = formValue(
        keyCreateBody,
        withoutUndefined({ label: field(form, "label").slice(0, 200), expiresAt: field(form, "expiresAt") }),
      );
      const issued = await createKey(services, actor(c), id, body);
      // The plain key is in this one answer (not cached: see the console's page headers) and nowhere else.
      return keysPage(c, { tenant: id, id: issued.id, key: issued.key }, 201);
    },

    "console.keys.rotate": async (c) => {
      const id = keyTenant(services, c, param(c, "id")).id;
      const form = await formOf(c);
      const body = formValue(
        keyRotateBody,
        withoutUndefined({ graceSeconds: numberField(form, "graceSeconds"), expiresAt: field(form, "expiresAt") }),
      );
      const r = await rotateKey(services, actor(c), id, param(c, "keyId"), body);
      return keysPage(c, { tenant: id, id: r.id, key: r.key, replaced: r.replaced, replacedExpiresAt: r.replacedExpiresAt }, 201);
    },

    "console.keys.revoke": async (c) => {
      const tenant = keyTenant(services, c, param(c, "id"));
      const keyId = param(c, "keyId");
      // A tenant managing itself keeps one live key (an admin is held to the fleet's last admin key instead).
      if (!c.get("viewer").canEdit) refuseLastOwnKey(tenant, keyId, services.now());
      await revokeKey(services, actor(c), tenant.id, keyId);
      return c.redirect(href(`/keys?revoked=${keyId}`), 303);
    },
  };
}
