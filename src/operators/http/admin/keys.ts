// Admin API: a tenant's keys — create (the plain key is in that one answer and nowhere else), rotate, revoke, expire.
// The HTTP face of ../../actions/keys.ts, which the console calls too.
import type { Context } from "hono";
import type { GatewayEnv } from "../../../context.js";
import type { GatewayServices } from "../../../services.js";
import { createKey, expireKey, revokeKey, rotateKey } from "../../actions/keys.js";
import { actorOf } from "../actor.js";
import { keyCreateBody, keyExpireBody, keyRotateBody } from "../../../routing/admin-schemas.js";
import { validBody } from "./validate.js";
import type { Handlers } from "../../../routing/handlers.js";

type Ctx = Context<GatewayEnv>;

/** The key rows of the admin API (src/routing/own-rows.ts); the chain has checked the operator caller. */
export function keyAdminHandlers(services: GatewayServices): Handlers {
  const p = (c: Ctx, name: string) => c.req.param(name) ?? "";
  return {
    "admin.keys.create": async (c) =>
      c.json(await createKey(services, actorOf(c), p(c, "id"), await validBody(c, services.platform, keyCreateBody)), 201),
    "admin.keys.rotate": async (c) =>
      c.json(await rotateKey(services, actorOf(c), p(c, "id"), p(c, "keyId"), await validBody(c, services.platform, keyRotateBody)), 201),
    "admin.keys.revoke": async (c) => c.json(await revokeKey(services, actorOf(c), p(c, "id"), p(c, "keyId"))),
    "admin.keys.expire": async (c) =>
      c.json(await expireKey(services, actorOf(c), p(c, "id"), p(c, "keyId"), await validBody(c, services.platform, keyExpireBody))),
  };
}
