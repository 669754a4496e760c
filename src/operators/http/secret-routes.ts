// The tenant secrets' rows (src/identity/tenant-secrets.ts): a tenant's own (`/_tollgate/secrets/NAME`, its key) and
// any tenant's for operators (`/_tollgate/admin/secrets/TENANT/NAME`). A value is written, never answered back; every
// change is audited (the rules before and after, never the value).
import type { Context } from "hono";
import type { GatewayEnv } from "../../context.js";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import type { Handlers } from "../../routing/handlers.js";
import { callerTenant } from "../../identity/caller.js";
import { SECRET_NAME, secretPutBody } from "../../routing/admin-schemas.js";
import { deleteSecret, putSecret } from "../actions/secrets.js";
import { floorLiveSandboxes } from "../../sandboxes/secret-env.js";
import { actorOf } from "./actor.js";
import { validBody } from "./admin/validate.js";

function secretName(c: Context<GatewayEnv>): string {
  const name = c.req.param("name") ?? "";
  if (!SECRET_NAME.test(name))
    throw new GatewayError(
      400,
      "invalid_params",
      `${name}: a secret's name is an environment variable's: letters, digits and _, not starting with a digit, at most 64.`,
      { field: "name" },
    );
  return name;
}

function knownTenant(services: GatewayServices, c: Context<GatewayEnv>): string {
  const id = c.req.param("tenant") ?? "";
  if (!services.directory.get(id)) throw new GatewayError(404, "not_found", `No tenant ${id}.`);
  return id;
}

const noSecret = (name: string) => new GatewayError(404, "not_found", `No secret ${name}.`);

export function secretHandlers(services: GatewayServices): Handlers {
  const secrets = services.vault;
  const list = async (c: Context<GatewayEnv>, tenant: string) => c.json({ secrets: await secrets.list(tenant) });
  const get = async (c: Context<GatewayEnv>, tenant: string) => {
    const name = secretName(c);
    const view = await secrets.describe(tenant, name);
    if (!view) throw noSecret(name);
    return c.json(view);
  };
  const put = async (c: Context<GatewayEnv>, tenant: string) => {
    const name = secretName(c);
    const input = await validBody(c, services.platform, secretPutBody);
    const { created, view, hostsAdded } = await putSecret(services, actorOf(c), tenant, name, input);
    if (hostsAdded) services.background(c, floorLiveSandboxes(services, c, tenant), "egress floor");
    return c.json(view, created ? 201 : 200);
  };
  const remove = async (c: Context<GatewayEnv>, tenant: string) => {
    const name = secretName(c);
    const view = await deleteSecret(services, actorOf(c), tenant, name);
    if (!view) throw noSecret(name);
    return c.json(view);
  };
  return {
    "own.secrets.list": (c) => list(c, callerTenant(c).id),
    "own.secrets.get": (c) => get(c, callerTenant(c).id),
    "own.secrets.put": (c) => put(c, callerTenant(c).id),
    "own.secrets.delete": (c) => remove(c, callerTenant(c).id),
    "admin.secrets.list": (c) => list(c, knownTenant(services, c)),
    "admin.secrets.get": (c) => get(c, knownTenant(services, c)),
    "admin.secrets.put": (c) => put(c, knownTenant(services, c)),
    "admin.secrets.delete": (c) => remove(c, knownTenant(services, c)),
  };
}
