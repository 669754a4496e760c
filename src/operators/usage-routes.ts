// Spend visibility: a tenant reads its own usage, budget and ledger; an admin reads everyone's. Both kinds of spend
// (x402 payments and credit-billed calls) count in one budget; each window also shows them apart.
import { Hono, type Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { presentedKey, requireScope, type Tenant } from "../../middleware/identify/tenants.js";
import { looksLikeGatewayToken } from "../../middleware/identify/tokens.js";
import { authenticateTenant } from "../../middleware/authenticate/index.js";
import { SPEND_KINDS, type LedgerEntry, type LedgerState, type SpendKind } from "../state/types.js";
import { atomicToUsd } from "../payments/money.js";
import { tenantLimits } from "../payments/limits.js";
import { resetAt } from "../state/windows.js";
import { fleetSavings } from "./savings.js";
import { isOperator } from "./roles.js";
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

export function usageRoutes(services: GatewayServices): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  const auth = (c: Context<GatewayEnv>) => authenticateTenant(c, services.directory);

  app.get("/usage", async (c) => {
    // A keyless MCP token reads its tenant's windows and its own cap (what its calls may still spend).
    const presented = presentedKey(c.req.raw.headers);
    if (!looksLikeGatewayToken(presented)) return c.json(await usageOf(services, await auth(c)));
    const token = await services.tokens.verify(presented);
    const tenant = token.kind === "mcp" ? services.directory.get(token.tenant) : undefined;
    if (!tenant?.enabled || token.cap === undefined)
      throw new GatewayError(401, "tenant_key_required", "Usage is read with a tenant key or an MCP token.");
    c.get("logFields").tenant = tenant.id;
    const spent = (await services.stores.ledger.usage(capLedgerTenant(token.jti), services.now())).total;
    const capLeft = token.cap > spent ? token.cap - spent : 0n;
    return c.json({
      ...(await usageOf(services, tenant)),
      token: {
        jti: token.jti,
        scopes: token.scopes,
        cap: atomicToUsd(token.cap),
        spent: atomicToUsd(spent),
        remaining: atomicToUsd(capLeft),
      },
    });
  });
  app.get("/ledger", async (c) => {
    const tenant = await auth(c);
    const entries = await services.stores.ledger.list({ tenant: tenant.id, ...listFilter(c) });
    return c.json({ entries: entries.map(ledgerView) });
  });
  /** Admin views: an admin or operator-readonly key (the admin API's own gate says the same). */
  const operator = async (c: Context<GatewayEnv>) => {
    const t = await auth(c);
    if (!isOperator(t)) requireScope(t, "admin");
  };
  app.get("/admin/usage", async (c) => {
    await operator(c);
    const tenants = await Promise.all(services.directory.list().map((t) => usageOf(services, t)));
    // The books against the bill: the reconciler's last comparison of the team's usage with the ledger.
    return c.json({ tenants, credits: { drift: (await lastCreditDrift(services)) ?? null } });
  });
  // Chargeback: ?from=&to= (ISO; default this month) &format=json|csv, by tenant, day, kind and route row.
  app.get("/admin/usage/export", async (c) => {
    await operator(c);
    const format = c.req.query("format") ?? "json";
    if (format !== "json" && format !== "csv")
      throw new GatewayError(400, "invalid_params", "format must be json or csv.", { field: "format" });
    const x = await usageExport(services, windowOf({ from: c.req.query("from"), to: c.req.query("to") }, services.now()));
    if (format === "json") return c.json(x);
    return c.body(usageCsv(x), 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="tollgate-usage-${x.from.slice(0, 10)}-${x.to.slice(0, 10)}.csv"`,
    });
  });
  app.get("/admin/credits/calibrate", async (c) => {
    await operator(c);
    return c.json(await calibrate(services, windowOf({ from: c.req.query("from"), to: c.req.query("to") }, services.now())));
  });
  app.get("/admin/ledger", async (c) => {
    await operator(c);
    const entries = await services.stores.ledger.list({ tenant: c.req.query("tenant") || undefined, ...listFilter(c) });
    return c.json({ entries: entries.map(ledgerView) });
  });
  return app;
}
