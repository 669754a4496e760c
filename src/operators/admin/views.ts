// Admin API: read-only views — the audit log and every tenant's ledger, filtered and paged.
import type { GatewayServices } from "../../services.js";
import type { AuditEntry, LedgerEntry } from "../../state/types.js";
import { ledgerView } from "../usage-routes.js";
import { auditQuery, ledgerQuery } from "./schemas.js";
import { validQuery } from "./validate.js";
import type { Handlers } from "../../routing/handlers.js";

export const SURFACES = ["search", "fetch", "session", "sandbox", "other"] as const;

/** What a ledger entry paid for, read from its route (its `kind` says how: x402 or credits). */
export function ledgerSurface(e: LedgerEntry): string {
  if (/session/.test(e.route)) return "session";
  if (/sandbox/.test(e.route)) return "sandbox";
  if (/fetch/.test(e.route)) return "fetch";
  if (/search/.test(e.route)) return "search";
  return "other";
}

/** The ledger lists at most this many entries for one page's filtering (newest first). */
const LEDGER_SCAN = 10_000;
/** A filtered audit page looks at most this many entries (newest first) for its matches. */
const AUDIT_SCAN = 10_000;

export interface AuditFilter {
  action?: string;
  actor?: string;
  target?: string;
  since?: number;
  until?: number;
}

/** Whether an audit target is about the tenant: "tenant:<id>", one of its keys "key:<id>/…" or resources "sandbox:<id>/…". */
export function concernsTenant(target: string, tenant: string): boolean {
  return target === `tenant:${tenant}` || ["key", "sandbox", "session"].some((k) => target.startsWith(`${k}:${tenant}/`));
}

function auditMatches(e: AuditEntry, f: AuditFilter): boolean {
  if (f.action) {
    const prefix = f.action.endsWith("*") ? f.action.slice(0, -1) : f.action.endsWith(".") ? f.action : undefined;
    if (prefix !== undefined ? !e.action.startsWith(prefix) : e.action !== f.action) return false;
  }
  if (f.actor && e.actor !== f.actor) return false;
  if (f.target && e.target !== f.target && !(f.target.startsWith("tenant:") && concernsTenant(e.target, f.target.slice(7)))) return false;
  if (f.since !== undefined && e.at < f.since) return false;
  if (f.until !== undefined && e.at >= f.until) return false;
  return true;
}

/**
 * One page of the audit log's entries matching `filter`, newest first, older than the `before` seq; `next` is the
 * cursor of the following page (null at the end, or when AUDIT_SCAN entries were looked at without filling it).
 */
export async function auditPage(
  services: GatewayServices,
  filter: AuditFilter,
  limit: number,
  before?: number,
): Promise<{ entries: AuditEntry[]; next: number | null }> {
  const out: AuditEntry[] = [];
  let cursor = before;
  let scanned = 0;
  const chunk = Math.max(limit, 200);
  while (out.length < limit && scanned < AUDIT_SCAN) {
    const batch = await services.stores.audit.list({ limit: chunk, before: cursor });
    scanned += batch.length;
    for (const e of batch) {
      if (filter.since !== undefined && e.at < filter.since) return { entries: out, next: null }; // older from here on
      if (auditMatches(e, filter)) out.push(e);
      cursor = e.seq;
      if (out.length === limit) return { entries: out, next: e.seq };
    }
    if (batch.length < chunk) return { entries: out, next: null };
  }
  return { entries: out, next: out.length ? out[out.length - 1]!.seq : null };
}

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
      // The ledger pages by count; a surface filter is applied here, so it scans further.
      const scan = q.surface ? LEDGER_SCAN : offset + q.limit + 1;
      const dated = q.since !== undefined || q.until !== undefined;
      const all = await services.stores.ledger.list({
        tenant: q.tenant || undefined,
        state: q.state,
        kind: q.kind,
        limit: dated ? LEDGER_SCAN : scan,
      });
      const matching = all.filter(
        (e) =>
          (!q.surface || ledgerSurface(e) === q.surface) &&
          (q.since === undefined || e.createdAt >= q.since) &&
          (q.until === undefined || e.createdAt < q.until),
      );
      const page = matching.slice(offset, offset + q.limit);
      const next = matching.length > offset + q.limit ? String(offset + q.limit) : null;
      return c.json({ entries: page.map((e) => ({ ...ledgerView(e), surface: ledgerSurface(e) })), next });
    },
  };
}
