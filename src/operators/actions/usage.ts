// Spend visibility as operators and tenants read it (the usage API and the console alike): a tenant's budget windows
// with both kinds of spend (x402 payments and credit-billed calls) and each apart, its savings, a keyless token's cap,
// the ledger's entries as the API shows them, and the fleet's usage with the books against the bill.
import type { GatewayServices } from "../../services.js";
import type { Tenant } from "../../identity/tenants.js";
import type { GatewayToken } from "../../identity/tokens.js";
import type { LedgerEntry, SpendKind } from "../../state/types.js";
import { atomicToUsd, capLedgerTenant, lastCreditDrift, remainingOf, tenantWindows } from "../../payments/index.js";
import { fleetSavings } from "./savings.js";

/** A tenant's usage: each budget window (spent, by kind, limit, remaining, reset), what the cache saved, its multiplier. */
export async function usageOf(services: GatewayServices, tenant: Tenant) {
  type Window = {
    limit: string | null;
    spent: string;
    byKind: Record<SpendKind, string>;
    remaining: string | null;
    resetsAt: string | null;
  };
  const windows = {} as Record<string, Window>;
  for (const w of await tenantWindows(services, tenant)) {
    windows[w.window] = {
      limit: w.limit === undefined ? null : atomicToUsd(w.limit),
      spent: atomicToUsd(w.spent),
      byKind: { x402: atomicToUsd(w.x402), credits: atomicToUsd(w.credits) },
      remaining: w.remaining === undefined ? null : atomicToUsd(w.remaining),
      resetsAt: w.resetsAt,
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

/**
 * A keyless token's usage: its tenant's, and its own cap (what its calls may still spend). An OAuth grant's tokens
 * share the grant's cap, in its window.
 */
export async function tokenUsage(
  services: GatewayServices,
  tenant: Tenant,
  token: Pick<GatewayToken, "jti" | "scopes" | "cap" | "grant" | "capWindow">,
) {
  const capUsage = await services.stores.ledger.usage(capLedgerTenant(token.grant ?? token.jti), services.now());
  const spent = capUsage[token.grant ? (token.capWindow ?? "total") : "total"];
  return {
    ...(await usageOf(services, tenant)),
    token: {
      jti: token.jti,
      scopes: token.scopes,
      cap: atomicToUsd(token.cap!),
      spent: atomicToUsd(spent),
      remaining: atomicToUsd(remainingOf(token.cap!, spent)),
      ...(token.grant ? { grant: token.grant, window: token.capWindow ?? "total" } : {}),
    },
  };
}

/** Every tenant's usage, and the reconciler's last comparison of the team's usage with the ledger. */
export async function fleetUsage(services: GatewayServices) {
  const tenants = await Promise.all(services.directory.list().map((t) => usageOf(services, t)));
  return { tenants, credits: { drift: (await lastCreditDrift(services)) ?? null } };
}
