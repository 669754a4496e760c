// Spend visibility: a tenant reads its own usage, budget and ledger; an admin reads everyone's. Both kinds of spend
// (x402 payments and credit-billed calls) count in one budget; each window also shows them apart.
import type { Context } from "hono";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import { callerTenant } from "../identity/caller.js";
import type { Handlers } from "../routing/handlers.js";
import { SPEND_KINDS, type LedgerEntry, type LedgerState, type SpendKind } from "../state/types.js";
import { atomicToUsd } from "../payments/money.js";
import { tenantLimits } from "../payments/limits.js";
import { resetAt } from "../state/windows.js";
import { fleetSavings } from "./savings.js";
import { lastCreditDrift } from "../payments/credit-drift.js";
import { calibrate, usageCsv, usageExport, windowOf } from "../payments/usage-export.js";
import { capLedgerTenant } from "../payments/spend.js";

const STATES = new Set<LedgerState>(["reserved", "committed", "released", "uncertain"]);

async function usageOf(services: GatewayServices, tenant: Tenant) {
  const now = services.now();
  const limits = tenantLimits(tenant);
  const used = await services.stores.ledger.usage(tenant.id, now);
  type Window = {
    limit: string | null;
    spent: string;
    byKind: Record<SpendKind, string>;
    remaining: string | null;
    resetsAt: string | null;
  };
  const windows = {} as Record<string, Window>;
  for (const w of ["daily", "monthly", "total"] as const) {
    const l = limits[w];
    windows[w] = {
      limit: l === undefined ? null : atomicToUsd(l),
      spent: atomicToUsd(used[w]),
      byKind: { x402: atomicToUsd(used.byKind.x402[w]), credits: atomicToUsd(used.byKind.credits[w]) },
      remaining: l === undefined ? null : atomicToUsd(l - used[w] > 0n ? l - used[w] : 0n),
      resetsAt: resetAt(w, now),
    };
  }
  // Answers served from the cache or joined to a call in flight, across the fleet, and what they would have cost.
  const s = await fleetSavings(services, [tenant.id]);
  const savings = { hits: s.hits, coalesced: s.coalesced, savedUsd: atomicToUsd(s.savedAtomic) };
  // Credit spend is shown as the tenant pays it: its multiplier (chargeback) is in every amount above.
  return { tenant: tenant.id, currency: "USD", creditMultiplier: tenant.creditMultiplier ?? "1", ...windows, savings };
}

export function ledgerView(e: LedgerEntry) {
  return {
    ...e,
    kind: e.kind ?? "x402",
    amountUsd: atomicToUsd(BigInt(e.amount)),
    reservedAmountUsd: e.reservedAmount ? atomicToUsd(BigInt(e.reservedAmount)) : undefined,
    validBefore: e.validBefore ? new Date(e.validBefore * 1000).toISOString() : undefined,
  };
}

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
      const { token, tenant } = caller;
      // An OAuth grant's tokens share the grant's cap, in its window.
      const capUsage = await services.stores.ledger.usage(capLedgerTenant(token.grant ?? token.jti), services.now());
      const spent = capUsage[token.grant ? (token.capWindow ?? "total") : "total"];
      const capLeft = token.cap! > spent ? token.cap! - spent : 0n;
      return c.json({
        ...(await usageOf(services, tenant)),
        token: {
          jti: token.jti,
          scopes: token.scopes,
          cap: atomicToUsd(token.cap!),
          spent: atomicToUsd(spent),
          remaining: atomicToUsd(capLeft),
          ...(token.grant ? { grant: token.grant, window: token.capWindow ?? "total" } : {}),
        },
      });
    },
    "own.ledger": async (c) => {
      const tenant = callerTenant(c);
      const entries = await services.stores.ledger.list({ tenant: tenant.id, ...listFilter(c) });
      return c.json({ entries: entries.map(ledgerView) });
    },
    "admin.usage": async (c) => {
      const tenants = await Promise.all(services.directory.list().map((t) => usageOf(services, t)));
      // The books against the bill: the reconciler's last comparison of the team's usage with the ledger.
      return c.json({ tenants, credits: { drift: (await lastCreditDrift(services)) ?? null } });
    },
    // Chargeback: ?from=&to= (ISO; default this month) &format=json|csv, by tenant, day, kind and route row.
    "admin.usage.export": async (c) => {
      const format = c.req.query("format") ?? "json";
      if (format !== "json" && format !== "csv")
        throw new GatewayError(400, "invalid_params", "format must be json or csv.", { field: "format" });
      const x = await usageExport(services, windowOf({ from: c.req.query("from"), to: c.req.query("to") }, services.now()));
      if (format === "json") return c.json(x);
      return c.body(usageCsv(x), 200, {
        "content-type": "text/csv; charset=utf-8",
        "content-disposition": `attachment; filename="tollgate-usage-${x.from.slice(0, 10)}-${x.to.slice(0, 10)}.csv"`,
      });
    },
    "admin.credits.calibrate": async (c) =>
      c.json(await calibrate(services, windowOf({ from: c.req.query("from"), to: c.req.query("to") }, services.now()))),
  };
}
