// POST /_tollgate/admin/console-links: the admin API's face of the console-link action (../../actions/console-links.ts):
// a one-time sign-in URL for the calling operator (admin or operator-readonly), made with an operator key.
import type { GatewayServices } from "../../../services.js";
import { GatewayError } from "../../../errors.js";
import type { Handlers } from "../../../routing/handlers.js";
import { publicOriginOf } from "../../../web/public-origin.js";
import { consoleLinkBody } from "../../../routing/admin-schemas.js";
import { createConsoleLink } from "../../actions/console-links.js";
import { actorOf } from "../actor.js";
import { validBody } from "./validate.js";

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
      const link = await createConsoleLink(services, actorOf(c), {
        tenant: caller.tenant.id,
        presentedKey: caller.presented,
        ...(body.ttlSeconds !== undefined ? { ttlSeconds: body.ttlSeconds } : {}),
        origin: publicOriginOf(c, services),
      });
      return c.json(link, 201);
    },
  };
}
