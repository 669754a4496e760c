// Admin API: config as code (docs/config-as-code.md) — the live state exported in the config file's shape, a file
// compared with the fleet (diff), applied (apply), and the drift since the last apply. The HTTP face of
// ../../actions/config-state.ts, which the Node entry's reload and the console call too.
import type { Context } from "hono";
import type { GatewayEnv } from "../../../context.js";
import type { GatewayServices } from "../../../services.js";
import { jsonValue } from "../../../routing/json-body.js";
import { GatewayError } from "../../../errors.js";
import type { Handlers } from "../../../routing/handlers.js";
import {
  applyConfig,
  configDrift,
  exportState,
  fileOwned,
  parseStateDocument,
  planConfig,
  stateToToml,
} from "../../actions/config-state.js";
import { CONFIG_BODY_LIMIT, configApplyBody } from "../../../routing/admin-schemas.js";
import { actorOf } from "../actor.js";
import { callerRights } from "../../../identity/caller.js";
import { publicOriginOf } from "../../../web/public-origin.js";

/** The body of a diff or apply: `{document, prune}`, every problem named by its field. */
async function fileOf(c: Context<GatewayEnv>, services: GatewayServices) {
  const r = configApplyBody.safeParse(await jsonValue(c, services.platform, CONFIG_BODY_LIMIT));
  if (!r.success) {
    const fields = r.error.issues.map((i) => ({ field: i.path.map(String).join(".") || "(body)", problem: i.message }));
    throw new GatewayError(400, "invalid_body", fields.map((f) => `${f.field}: ${f.problem}`).join("; "), { fields });
  }
  return { doc: parseStateDocument(services, r.data.document), prune: r.data.prune };
}

/** The config rows of the admin API (src/routing/own-rows.ts); the chain has checked the operator caller. */
export function configAdminHandlers(services: GatewayServices): Handlers {
  return {
    "admin.config.export": async (c) => {
      // The file holds the key hashes: an admin's, not a read-only operator's (who reads tenants by key id).
      if (!callerRights(c.get("caller")).changesAll)
        throw new GatewayError(403, "read_only", "Exporting the config needs the admin role: the file holds the keys' hashes.");
      const state = await exportState(services);
      // The tenants the gateway's own config file names: its reloads apply their blocks as the file changes them.
      const fileOwned = services.tenantSync.fileTenants().map((t) => t.id);
      if (c.req.query("format") === "json") return c.json({ ...state, fileOwned }, 200, { "cache-control": "no-store" });
      const from = publicOriginOf(c, services);
      return c.body(stateToToml(state, from, services.now(), fileOwned), 200, {
        "content-type": "application/toml; charset=utf-8",
        "cache-control": "no-store",
      });
    },
    "admin.config.diff": async (c) => {
      const { doc, prune } = await fileOf(c, services);
      // The gateway's own file owns its tenants: a change to one is refused, named with the file.
      return c.json(await planConfig(services, doc, prune, fileOwned(services)));
    },
    "admin.config.apply": async (c) => {
      const { doc, prune } = await fileOf(c, services);
      const plan = await applyConfig(services, actorOf(c), doc, {
        prune,
        origin: "admin API (tollgate apply)",
        owned: fileOwned(services),
      });
      return c.json({ ...plan, applied: !plan.inSync });
    },
    "admin.config.drift": async (c) => c.json(await configDrift(services)),
  };
}
