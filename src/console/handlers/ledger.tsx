/** @jsxImportSource hono/jsx */
// The console's ledger: the visible tenants' entries filtered by tenant, state, kind, surface and day, a page at a
// time, or every match as CSV; read through ../../operators/actions/views.ts as the admin API's ledger is.
import type { GatewayServices } from "../../services.js";
import { SPEND_KINDS, type LedgerEntry, type LedgerState, type SpendKind } from "../../state/types.js";
import { atomicToUsd } from "../../payments/index.js";
import { ledgerEntries, ledgerSurface, SURFACES } from "../../operators/actions/views.js";
import { LedgerPage, type LedgerFilters } from "../pages/lists.js";
import { type C, DAY, type Pages, pick, render, visibleTenant, visibleTenants } from "../kit.js";

const STATES: LedgerState[] = ["reserved", "committed", "released", "uncertain"];

/** A CSV cell: quoted when needed, and never read as a formula by a spreadsheet. */
function csvCell(v: unknown): string {
  let s = v === undefined || v === null ? "" : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const CSV_COLUMNS = ["createdAt", "tenant", "id", "route", "surface", "kind", "state", "amountUsd", "transaction", "resource", "reason"];
function ledgerCsv(entries: LedgerEntry[]): string {
  const rows = entries.map((e) =>
    [
      new Date(e.createdAt).toISOString(),
      e.tenant,
      e.id,
      e.route,
      ledgerSurface(e),
      e.kind ?? "x402",
      e.state,
      atomicToUsd(BigInt(e.amount)),
      e.transaction,
      e.resource,
      e.reason,
    ]
      .map(csvCell)
      .join(","),
  );
  return `${[CSV_COLUMNS.join(","), ...rows].join("\r\n")}\r\n`;
}

export function ledgerPages(services: GatewayServices): Pages {
  async function ledgerRows(c: C): Promise<{ filters: LedgerFilters; matching: LedgerEntry[] }> {
    const viewer = c.get("viewer");
    const q = c.req.query();
    const limit = Math.min(1000, Math.max(1, Math.floor(Number(q.limit)) || 100));
    const offset = Math.max(0, Math.floor(Number(q.offset)) || 0);
    const filters: LedgerFilters = {
      tenant: viewer.admin ? q.tenant || undefined : viewer.tenant,
      state: pick(q.state, STATES),
      kind: pick(q.kind, SPEND_KINDS as readonly SpendKind[]),
      surface: pick(q.surface, SURFACES),
      from: DAY.test(q.from ?? "") && !Number.isNaN(Date.parse(q.from!)) ? q.from : undefined,
      to: DAY.test(q.to ?? "") && !Number.isNaN(Date.parse(q.to!)) ? q.to : undefined,
      limit,
      offset,
    };
    if (filters.tenant && viewer.admin) visibleTenant(services, c, filters.tenant);
    const matching = await ledgerEntries(
      services,
      {
        tenant: filters.tenant,
        state: filters.state as LedgerState | undefined,
        kind: filters.kind as SpendKind | undefined,
        surface: filters.surface as (typeof SURFACES)[number] | undefined,
        since: filters.from ? Date.parse(filters.from) : undefined,
        until: filters.to ? Date.parse(filters.to) + 86_400_000 : undefined,
      },
      offset + limit + 1,
      // A keyless token's cap entries mirror its tenant's; the tenant's own entry is the one shown.
      { tenantsOnly: true },
    );
    return { filters, matching };
  }

  return {
    "console.ledger": async (c) => {
      const viewer = c.get("viewer");
      const { filters, matching } = await ledgerRows(c);
      const entries = matching.slice(filters.offset, filters.offset + filters.limit);
      const tenants = visibleTenants(services, c).map((t) => t.id);
      return render(
        c,
        <LedgerPage
          viewer={viewer}
          nonce={c.get("nonce")}
          tenants={tenants}
          filters={filters}
          entries={entries}
          hasMore={matching.length > filters.offset + filters.limit}
        />,
      );
    },

    /** Every matching entry (up to the scan bound), not one page: what an export is for. */
    "console.ledger.csv": async (c) => {
      const { filters, matching } = await ledgerRows(c);
      const name = `tollgate-ledger-${filters.tenant ?? "all"}-${new Date(services.now()).toISOString().slice(0, 10)}.csv`;
      return c.body(ledgerCsv(matching), 200, {
        "content-type": "text/csv; charset=utf-8",
        "content-disposition": `attachment; filename="${name}"`,
      });
    },
  };
}
