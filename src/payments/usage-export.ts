// Chargeback from the ledger: spend in a time window by tenant, UTC day, kind and route row, summing exactly to the
// ledger's entries (atomic units added as bigint, printed once), as JSON or CSV; and the calibration of the credit
// price table from the ratio of what the upstream reported to what the table estimated, per row.
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { LedgerEntry, ResourceKind } from "../state/types.js";
import type { Meter, PriceName } from "../routing/table.js";
import { atomicToUsd } from "./money.js";
import { settledEntryAccount } from "./credit-reports.js";

/** The most entries one export reads; a wider window is refused (narrow from/to). */
const MAX_ENTRIES = 100_000;
/** The longest window one export covers. */
const MAX_WINDOW_MS = 366 * 86_400_000;

export interface UsageWindow {
  from: number;
  to: number;
}

/**
 * `from` and `to` from a query (ISO dates or date-times); default: this UTC month so far. A date-time `to` is exclusive;
 * a bare date `to` includes that whole UTC day (`--from 2026-11-24 --to 2026-11-24` is that one day).
 */
export function windowOf(q: { from?: string; to?: string }, now: number): UsageWindow {
  const parse = (name: string, s: string | undefined, fallback: number) => {
    if (s === undefined || s === "") return fallback;
    const t = Date.parse(s);
    if (name === "to" && /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(t)) return t + 86_400_000;
    if (Number.isNaN(t))
      throw new GatewayError(400, "invalid_params", `${name}: expected an ISO-8601 date like "2026-11-01" or "2026-11-01T00:00:00Z"`, {
        field: name,
      });
    return t;
  };
  const d = new Date(now);
  const from = parse("from", q.from, Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
  const to = parse("to", q.to, now + 1);
  if (to <= from) throw new GatewayError(400, "invalid_params", "to must be after from.", { field: "to" });
  if (to - from > MAX_WINDOW_MS) throw new GatewayError(400, "invalid_params", "The window may span at most 366 days.", { field: "from" });
  return { from, to };
}

/** Every entry reserved in the window that counts as spend (released ones do not), keyless tokens' mirrors left out. */
async function spendIn(services: GatewayServices, w: UsageWindow): Promise<LedgerEntry[]> {
  const all = await services.stores.ledger.list({ limit: MAX_ENTRIES + 1 });
  if (all.length > MAX_ENTRIES && all[MAX_ENTRIES]!.createdAt >= w.from)
    throw new GatewayError(413, "window_too_large", `More than ${MAX_ENTRIES} ledger entries; narrow from/to.`);
  return all.filter((e) => e.createdAt >= w.from && e.createdAt < w.to && e.state !== "released" && !e.tenant.startsWith("token:"));
}

interface UsageRow {
  tenant: string;
  /**
   * With [[upstream.accounts]]: the upstream account the spend went to (credits: the account that settled it, or that
   * holds its resource; x402 payments: the account whose own wallet paid, else ""; unsettled calls: ""). Absent without accounts.
   */
  account?: string;
  day: string;
  kind: string;
  route: string;
  entries: number;
  /** What the tenant is charged (its multiplier included): committed plus still held. */
  amountUsd: string;
  committedUsd: string;
  heldUsd: string;
  /** Credits: the cost before the tenant's multiplier (committed entries at their recorded cost, holds at reservation). */
  costUsd: string;
}

export interface UsageExport {
  from: string;
  to: string;
  currency: "USD";
  rows: UsageRow[];
  entries: number;
  totalUsd: string;
}

/** The window's spend grouped by tenant, day, kind and route, in that order. */
export async function usageExport(services: GatewayServices, w: UsageWindow): Promise<UsageExport> {
  type Acc = { entries: number; amount: bigint; committed: bigint; held: bigint; cost: bigint };
  const groups = new Map<string, Acc>();
  let total = 0n;
  let count = 0;
  const accounts = services.upstream.accounts;
  const byAccount = !!accounts?.configured;
  for (const e of await spendIn(services, w)) {
    const account = byAccount ? await accountOfEntry(services, e) : "";
    const key = [e.tenant, e.day, e.kind, e.route, account].join("\u0000");
    const acc = groups.get(key) ?? { entries: 0, amount: 0n, committed: 0n, held: 0n, cost: 0n };
    const amount = BigInt(e.amount);
    acc.entries++;
    acc.amount += amount;
    if (e.state === "committed") acc.committed += amount;
    else acc.held += amount;
    acc.cost += e.costAmount !== undefined ? BigInt(e.costAmount) : amount;
    groups.set(key, acc);
    total += amount;
    count++;
  }
  const rows = [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, a]) => {
      const [tenant, day, kind, route, account] = key.split("\u0000") as [string, string, string, string, string];
      return {
        tenant,
        ...(byAccount ? { account } : {}),
        day,
        kind,
        route,
        entries: a.entries,
        amountUsd: atomicToUsd(a.amount),
        committedUsd: atomicToUsd(a.committed),
        heldUsd: atomicToUsd(a.held),
        costUsd: atomicToUsd(a.cost),
      };
    });
  return {
    from: new Date(w.from).toISOString(),
    to: new Date(w.to).toISOString(),
    currency: "USD",
    rows,
    entries: count,
    totalUsd: atomicToUsd(total),
  };
}

/** The upstream account of a ledger entry (with several accounts): where it settled, else its resource's, else "". */
async function accountOfEntry(services: GatewayServices, e: LedgerEntry): Promise<string> {
  if (e.kind !== "credits") return e.account ?? ""; // x402: the account whose wallet paid, when not the gateway's
  const settled = await settledEntryAccount(services, e.id);
  if (settled) return settled;
  const at = e.resource?.indexOf(":") ?? -1;
  if (!e.resource || at <= 0) return "";
  return (await services.upstream.accounts?.accountOf(e.resource.slice(0, at) as ResourceKind, e.resource.slice(at + 1))) ?? "";
}

const CSV_COLUMNS = ["tenant", "day", "kind", "route", "entries", "amountUsd", "committedUsd", "heldUsd", "costUsd"] as const;
const CSV_COLUMNS_BY_ACCOUNT = ["tenant", "account", ...CSV_COLUMNS.slice(1)] as const;

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
const csvField = (v: string | number) => {
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export function usageCsv(x: UsageExport): string {
  // With upstream accounts, each row names its account (the second column).
  const columns: readonly (keyof UsageRow)[] = x.rows.some((r) => r.account !== undefined) ? CSV_COLUMNS_BY_ACCOUNT : CSV_COLUMNS;
  const lines = [columns.join(",")];
  for (const r of x.rows) lines.push(columns.map((c) => csvField(r[c] ?? "")).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

interface CalibrationRow {
  route: string;
  price: PriceName;
  entries: number;
  reportedUsd: string;
  estimatedUsd: string;
  /** reported ÷ estimated, 4 decimals. */
  ratio: string;
  currentUsd: string;
  proposedUsd: string;
}

/**
 * Per route row, over credits entries settled from the upstream's report in the window: how what the upstream
 * reported compares with what the price table estimated for the same work, and the price that would have matched.
 * Rows sharing a price name are pooled into one proposal.
 */
/** What GET /_tollgate/admin/credits/calibrate answers (and `tollgate credits calibrate` reads). */
export interface Calibration {
  from: string;
  to: string;
  rows: CalibrationRow[];
  prices: Record<string, string>;
}

/** `table`: the route table's rows (each metered row's price name, by its name: what a ledger entry's `route` names). */
export async function calibrate(
  services: GatewayServices,
  w: UsageWindow,
  table: ReadonlyArray<{ name: string; meter?: Meter }>,
): Promise<Calibration> {
  const priceOf = new Map<string, PriceName>();
  for (const r of table) if (r.meter) priceOf.set(r.name, r.meter.price);
  const byRoute = new Map<string, { entries: number; reported: bigint; estimated: bigint }>();
  for (const e of await spendIn(services, w)) {
    if (e.kind !== "credits" || e.state !== "committed" || e.settledFrom !== "upstream") continue;
    if (e.costAmount === undefined || e.estimatedAmount === undefined || !priceOf.has(e.route)) continue;
    const acc = byRoute.get(e.route) ?? { entries: 0, reported: 0n, estimated: 0n };
    acc.entries++;
    acc.reported += BigInt(e.costAmount);
    acc.estimated += BigInt(e.estimatedAmount);
    byRoute.set(e.route, acc);
  }
  const prices = services.payments.amounts.creditPrices as Record<PriceName, bigint>;
  const proposeFor = (price: PriceName, reported: bigint, estimated: bigint) =>
    estimated === 0n ? prices[price] : (prices[price] * reported + estimated / 2n) / estimated;
  const ratioOf = (reported: bigint, estimated: bigint) =>
    estimated === 0n ? "n/a" : (Number((reported * 10_000n) / estimated) / 10_000).toFixed(4);
  const rows: CalibrationRow[] = [...byRoute.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([route, a]) => {
      const price = priceOf.get(route)!;
      return {
        route,
        price,
        entries: a.entries,
        reportedUsd: atomicToUsd(a.reported),
        estimatedUsd: atomicToUsd(a.estimated),
        ratio: ratioOf(a.reported, a.estimated),
        currentUsd: services.config.credits.prices[price],
        proposedUsd: atomicToUsd(proposeFor(price, a.reported, a.estimated)),
      };
    });
  const pooled = new Map<PriceName, { reported: bigint; estimated: bigint }>();
  for (const [route, a] of byRoute) {
    const p = priceOf.get(route)!;
    const acc = pooled.get(p) ?? { reported: 0n, estimated: 0n };
    acc.reported += a.reported;
    acc.estimated += a.estimated;
    pooled.set(p, acc);
  }
  const proposed: Partial<Record<PriceName, string>> = {};
  for (const [p, a] of pooled) proposed[p] = atomicToUsd(proposeFor(p, a.reported, a.estimated));
  return { from: new Date(w.from).toISOString(), to: new Date(w.to).toISOString(), rows, prices: proposed };
}
