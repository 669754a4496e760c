// A BudgetLedger that counts every state change it makes into the metrics, so payment counters match the ledger.
import type { BudgetLedger, LedgerState, StateStores } from "../state/types.js";
import type { GatewayMetrics } from "./gateway-metrics.js";

/**
 * Wraps `stores.ledger`: each reserve, commit, release and markUncertain that succeeds increments
 * tollgate_payments_total{state} (and the USD amount) once, for the entry's tenant. Entries of keyless tokens' own caps
 * (`token:<id>`) mirror their tenant's entry and are not counted twice. Tenant and amount are remembered from the
 * reservation; an entry reserved by another instance (the reconciler settling it after a crash) is read back once.
 */
function meteredLedger(ledger: BudgetLedger, metrics: GatewayMetrics): BudgetLedger {
  const known = new Map<string, { tenant: string; amount: bigint }>();
  /** Entries settled by another instance never come back here: forget the oldest past this many. */
  const MAX_KNOWN = 10_000;

  async function count(id: string, state: LedgerState, terminal: boolean): Promise<void> {
    let e = known.get(id);
    if (!e) {
      const stored = await ledger.get(id).catch(() => undefined);
      if (!stored || stored.kind === "credits") return;
      e = { tenant: stored.tenant, amount: BigInt(stored.amount) };
    }
    if (terminal) known.delete(id);
    if (!e.tenant.startsWith("token:")) metrics.payment(e.tenant, state, e.amount);
  }

  return {
    async reserve(entry, limits, now) {
      const r = await ledger.reserve(entry, limits, now);
      // Payments are x402 authorizations; credit spend is in the ledger and the budget gauges, not these counters.
      if (
        r.ok &&
        (entry.kind ?? "x402") === "x402" &&
        !known.has(entry.id) &&
        r.entry.state === "reserved" &&
        r.entry.createdAt === r.entry.updatedAt
      ) {
        known.set(entry.id, { tenant: entry.tenant, amount: BigInt(entry.amount) });
        if (known.size > MAX_KNOWN) known.delete(known.keys().next().value!);
        if (!entry.tenant.startsWith("token:")) metrics.payment(entry.tenant, "reserved", BigInt(entry.amount));
      }
      return r;
    },
    async commit(id, transaction, now, finalAmount, fields) {
      await ledger.commit(id, transaction, now, finalAmount, fields);
      await count(id, "committed", true);
    },
    resettle: (id, finalAmount, fields, now) => ledger.resettle(id, finalAmount, fields, now),
    async release(id, reason, now) {
      await ledger.release(id, reason, now);
      await count(id, "released", true);
    },
    async markUncertain(id, reason, now) {
      await ledger.markUncertain(id, reason, now);
      await count(id, "uncertain", false);
    },
    get: (id) => ledger.get(id),
    list: (filter) => ledger.list(filter),
    usage: (tenant, now) => ledger.usage(tenant, now),
    expiredHolds: (now, limit) => ledger.expiredHolds(now, limit),
    expiredCreditHolds: (now, limit) => ledger.expiredCreditHolds(now, limit),
    attach: (id, fields, now) => ledger.attach(id, fields, now),
    extend: (id, by, limits, now) => ledger.extend(id, by, limits, now),
  };
}

/** The same stores with the ledger metered. */
export function withMeteredLedger<S extends StateStores>(stores: S, metrics: GatewayMetrics): S {
  return { ...stores, ledger: meteredLedger(stores.ledger, metrics), close: () => stores.close(), ping: () => stores.ping() };
}
