/** @jsxImportSource hono/jsx */
// The console's config drift page (operators only): ../../operators/actions/config-state.ts's drift, as the admin
// API's GET /admin/config/drift and /ready show it.
import { GatewayError } from "../../errors.js";
import { configDrift } from "../../operators/actions/config-state.js";
import type { GatewayServices } from "../../services.js";
import { DriftPage } from "../pages/drift.js";
import { type Pages, render } from "../kit.js";

export function driftPages(services: GatewayServices): Pages {
  return {
    "console.config": async (c) => {
      const viewer = c.get("viewer");
      if (viewer.role === "tenant") throw new GatewayError(404, "not_found", "There is no such console page.");
      return render(c, <DriftPage viewer={viewer} nonce={c.get("nonce")} drift={await configDrift(services)} />);
    },
  };
}
