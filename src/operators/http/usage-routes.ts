// Spend visibility, the HTTP face of ../actions/usage.ts: a tenant reads its own usage, budget and ledger; an admin
// reads everyone's. Both kinds of spend (x402 payments and credit-billed calls) count in one budget; each window also
// shows them apart.
import type { Context } from "hono";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { callerTenant } from "../../identity/caller.js";
import type { Handlers } from "../../routing/handlers.js";
import { ROUTES } from "../../routing/table.js";
import { SPEND_KINDS, type LedgerState, type SpendKind } from "../../state/types.js";
import { calibrate, usageCsv, usageExport, windowOf } from "../../payments/index.js";
import { fleetUsage, ledgerView, tokenUsage, usageOf } from "../actions/usage.js";
import { withSales } from "../../sales/usage.js";

const STATES = new Set<LedgerState>(["reserved", "committed", "released", "uncertain"]);

/** ?state=, ?kind=x402|credits, ?resource=sandbox:<id>, ?limit= (1–1000, default 100). */
function listFilter(c: Context) {
  const state = c.req.query("state") as LedgerState | undefined;
  if (state && !STATES.has(state)) throw new GatewayError(400, "invalid_state", `state must be one of ${[...STATES].join(", ")}`);
  const kind = c.req.query("kind") as SpendKind | undefined;
  if (kind && !SPEND_KINDS.includes(kind)) throw new GatewayError(400, "invalid_kind", `kind must be one of ${SPEND_KINDS.join(", ")}`);
  const resource = c.req.query("resource") || undefined;
  const limit = Math.min(1000, Math.max(1, Number(c.req.query("limit") ?? 100) || 100));
  return { state, kind: kind || undefined, resource, limit };
}

/** The spend rows: /usage and /ledger (the caller's own), the admin views (an operator caller, checked by the chain). */
export function usageHandlers(services: GatewayServices): Handlers {
  return {
    "own.usage": async (c) => {
      // A keyless MCP token reads its tenant's windows and its own cap (what its calls may still spend).
      const caller = c.get("caller");
      if (caller.via !== "token") return c.json(await usageOf(services, callerTenant(c)));
      return c.json(await tokenUsage(services, caller.tenant, caller.token));
    },
    "own.ledger": async (c) => {
      const tenant = callerTenant(c);
      const entries = await services.stores.ledger.list({ tenant: tenant.id, ...listFilter(c) });
      return c.json({ entries: entries.map(ledgerView) });
    },
    // Every tenant, and the books against the bill: the reconciler's last comparison of the team's usage with the ledger.
    "admin.usage": async (c) => c.json(await fleetUsage(services)),
    // Chargeback: ?from=&to= (ISO; default this month) &format=json|csv, by tenant, day, kind and route row.
    "admin.usage.export": async (c) => {
      const format = c.req.query("format") ?? "json";
      if (format !== "json" && format !== "csv")
        throw new GatewayError(400, "invalid_params", "format must be json or csv.", { field: "format" });
      const spend = await usageExport(services, windowOf({ from: c.req.query("from"), to: c.req.query("to") }, services.now()));
      const x = await withSales(services, spend); // with [sales]: a `sale` row per wallet buyer and day, and `buyers`
      if (format === "json") return c.json(x);
      return c.body(usageCsv(x), 200, {
        "content-type": "text/csv; charset=utf-8",
        "content-disposition": `attachment; filename="tollgate-usage-${x.from.slice(0, 10)}-${x.to.slice(0, 10)}.csv"`,
      });
    },
    "admin.credits.calibrate": async (c) =>
      c.json(await calibrate(services, windowOf({ from: c.req.query("from"), to: c.req.query("to") }, services.now()), ROUTES)),
  };
}
