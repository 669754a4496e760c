// Admin API: read-only views — the audit log and every tenant's ledger, filtered and paged.
import { Hono } from "hono";
import type { GatewayEnv } from "../../context.js";
import type { GatewayServices } from "../../services.js";
import type { LedgerEntry } from "../../state/types.js";
import { ledgerView } from "../usage.js";
import { ledgerQuery, pageQuery } from "./schemas.js";
import { validQuery } from "./validate.js";

/** What a ledger entry paid for, read from its route (its `kind` says how: x402 or credits). */
function ledgerSurface(e: LedgerEntry): string {
  if (/session/.test(e.route)) return "session";
  if (/sandbox/.test(e.route)) return "sandbox";
  if (/fetch/.test(e.route)) return "fetch";
  if (/search/.test(e.route)) return "search";
  return "other";
}

/** The ledger lists at most this many entries for one page's filtering (newest first). */
const LEDGER_SCAN = 10_000;

export function viewAdminRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();

  app.get("/audit", async (c) => {
    const q = validQuery(c, pageQuery);
    const before = q.cursor !== undefined && /^\d+$/.test(q.cursor) ? Number(q.cursor) : undefined;
    const entries = await services.stores.audit.list({ limit: q.limit, before });
    const next = entries.length === q.limit ? String(entries[entries.length - 1]!.seq) : null;
    return c.json({ entries: entries.map((e) => ({ ...e, at: new Date(e.at).toISOString() })), next });
  });

  app.get("/ledger", async (c) => {
    const q = validQuery(c, ledgerQuery);
    const offset = q.cursor !== undefined && /^\d+$/.test(q.cursor) ? Number(q.cursor) : 0;
    // The ledger pages by count; a surface filter is applied here, so it scans further.
    const scan = q.surface ? LEDGER_SCAN : offset + q.limit + 1;
    const all = await services.stores.ledger.list({ tenant: q.tenant || undefined, state: q.state, kind: q.kind, limit: scan });
    const matching = q.surface ? all.filter((e) => ledgerSurface(e) === q.surface) : all;
    const page = matching.slice(offset, offset + q.limit);
    const next = matching.length > offset + q.limit ? String(offset + q.limit) : null;
    return c.json({ entries: page.map((e) => ({ ...ledgerView(e), surface: ledgerSurface(e) })), next });
  });
  return app;
}
