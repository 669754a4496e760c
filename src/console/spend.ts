// What the console shows about money: each tenant's spend per budget window (both kinds, and each apart) against
// its limits, and what the cache and coalescing saved.
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import type { SpendKind } from "../state/types.js";
import { ledgerSurface, SURFACES } from "../operators/actions/views.js";
import { tenantWindows, type WindowFigures } from "../payments/index.js";

export type WindowSpend = WindowFigures;

export interface TenantSpend {
  tenant: Tenant;
  windows: WindowSpend[];
}

export async function tenantSpend(services: GatewayServices, tenant: Tenant): Promise<TenantSpend> {
  return { tenant, windows: await tenantWindows(services, tenant) };
}

/** The ledger entries a history is drawn from: the newest this many (of the tenants shown). */
const HISTORY_SCAN = 10_000;
const HISTORY_DAYS = 30;

interface DaySpend {
  day: string;
  byKind: Record<SpendKind, bigint>;
  bySurface: Record<string, bigint>;
}

export interface SpendHistory {
  days: DaySpend[];
  /** Tenants by spend over the days shown, largest first (at most 10). */
  topTenants: Array<{ tenant: string; amount: bigint }>;
  /** Routes by spend over the days shown, largest first (at most 10). */
  topRoutes: Array<{ route: string; amount: bigint; calls: number }>;
  /** The scan reached HISTORY_SCAN entries: older days may be incomplete. */
  truncated: boolean;
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const top = <T extends { amount: bigint }>(rows: T[]) =>
  rows.sort((a, b) => (b.amount > a.amount ? 1 : b.amount < a.amount ? -1 : 0)).slice(0, 10);

/**
 * Daily spend over the last HISTORY_DAYS days (UTC) by kind and by surface, with the top tenants and routes: what was
 * committed, reserved or held uncertain (released reservations spent nothing). `tenant` narrows it to one tenant.
 */
export async function spendHistory(services: GatewayServices, tenants: string[], tenant?: string): Promise<SpendHistory> {
  const now = services.now();
  const days: DaySpend[] = [];
  for (let i = HISTORY_DAYS - 1; i >= 0; i--)
    days.push({
      day: dayOf(now - i * 86_400_000),
      byKind: { x402: 0n, credits: 0n },
      bySurface: Object.fromEntries(SURFACES.map((s) => [s, 0n])),
    });
  const index = new Map(days.map((d) => [d.day, d]));
  const entries = await services.stores.ledger.list({ tenant, limit: HISTORY_SCAN });
  const visible = new Set(tenants);
  const byTenant = new Map<string, bigint>();
  const byRoute = new Map<string, { amount: bigint; calls: number }>();
  for (const e of entries) {
    if (e.state === "released" || !visible.has(e.tenant)) continue; // token:… mirror entries are not tenants
    const d = index.get(e.day) ?? index.get(dayOf(e.createdAt));
    if (!d) continue;
    const amount = BigInt(e.amount);
    d.byKind[e.kind ?? "x402"] += amount;
    d.bySurface[ledgerSurface(e)] = (d.bySurface[ledgerSurface(e)] ?? 0n) + amount;
    byTenant.set(e.tenant, (byTenant.get(e.tenant) ?? 0n) + amount);
    const r = byRoute.get(e.route) ?? { amount: 0n, calls: 0 };
    r.amount += amount;
    r.calls++;
    byRoute.set(e.route, r);
  }
  return {
    days,
    topTenants: top([...byTenant].map(([t, amount]) => ({ tenant: t, amount }))),
    topRoutes: top([...byRoute].map(([route, r]) => ({ route, ...r }))),
    truncated: entries.length >= HISTORY_SCAN,
  };
}
