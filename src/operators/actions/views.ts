// Read-only views operators share (the admin API and the console alike): the audit log filtered and paged, and the
// ledger filtered by tenant, state, kind, surface and date.
import type { GatewayServices } from "../../services.js";
import type { AuditEntry, LedgerEntry, LedgerState, SpendKind } from "../../state/types.js";

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
  return target === `tenant:${tenant}` || ["key", "sandbox", "session", "secret"].some((k) => target.startsWith(`${k}:${tenant}/`));
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

export interface LedgerFilter {
  tenant?: string;
  state?: LedgerState;
  kind?: SpendKind;
  surface?: (typeof SURFACES)[number];
  /** createdAt at or after (epoch ms). */
  since?: number;
  /** createdAt before (epoch ms). */
  until?: number;
}

/**
 * The ledger's entries matching `filter`, newest first: the first `wanted` of them at least when there are that many
 * (the store pages by count; a filter applied here scans up to LEDGER_SCAN entries instead). `tenantsOnly` leaves out
 * a keyless token's cap entries, which mirror its tenant's.
 */
export async function ledgerEntries(
  services: GatewayServices,
  filter: LedgerFilter,
  wanted: number,
  opts: { tenantsOnly?: boolean } = {},
): Promise<LedgerEntry[]> {
  const { since, until, surface } = filter;
  const scanAll = !!surface || since !== undefined || until !== undefined || (!!opts.tenantsOnly && !filter.tenant);
  const all = await services.stores.ledger.list({
    tenant: filter.tenant,
    state: filter.state,
    kind: filter.kind,
    limit: scanAll ? LEDGER_SCAN : wanted,
  });
  return all.filter(
    (e) =>
      (!opts.tenantsOnly || !e.tenant.startsWith("token:")) &&
      (!surface || ledgerSurface(e) === surface) &&
      (since === undefined || e.createdAt >= since) &&
      (until === undefined || e.createdAt < until),
  );
}
