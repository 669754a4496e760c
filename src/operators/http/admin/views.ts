// Admin API: read-only views — the audit log and every tenant's ledger, filtered and paged. The HTTP face of
// ../../actions/views.ts, which the console reads too.
import type { GatewayServices } from "../../../services.js";
import { auditPage, ledgerEntries, ledgerSurface } from "../../actions/views.js";
import { ledgerView } from "../../actions/usage.js";
import { auditQuery, ledgerQuery } from "../../../routing/admin-schemas.js";
import { validQuery } from "./validate.js";
import type { Handlers } from "../../../routing/handlers.js";

/** The read-only view rows of the admin API (src/routing/own-rows.ts). */
export function viewAdminHandlers(services: GatewayServices): Handlers {
  return {
    "admin.audit": async (c) => {
      const { limit, cursor, ...filter } = validQuery(c, auditQuery);
      const before = cursor !== undefined && /^\d+$/.test(cursor) ? Number(cursor) : undefined;
      const { entries, next } = await auditPage(services, filter, limit, before);
      return c.json({
        entries: entries.map((e) => ({ ...e, at: new Date(e.at).toISOString() })),
        next: next === null ? null : String(next),
      });
    },
    "admin.ledger": async (c) => {
      const q = validQuery(c, ledgerQuery);
      const offset = q.cursor !== undefined && /^\d+$/.test(q.cursor) ? Number(q.cursor) : 0;
      const filter = { tenant: q.tenant || undefined, state: q.state, kind: q.kind, surface: q.surface, since: q.since, until: q.until };
      const matching = await ledgerEntries(services, filter, offset + q.limit + 1);
      const page = matching.slice(offset, offset + q.limit);
      const next = matching.length > offset + q.limit ? String(offset + q.limit) : null;
      return c.json({ entries: page.map((e) => ({ ...ledgerView(e), surface: ledgerSurface(e) })), next });
    },
  };
}
