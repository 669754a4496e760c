// The money side's one port outward: payments announces budget and credit events here (a threshold crossed, a window
// exhausted, a settlement above its hold, an upstream report refused, the books drifting from the bill), each once
// across the fleet, and the savings of a cache hit or a joined call, each time; what is done
// about them (alert webhooks, the kill switch) is the listener's, which the gateway wires in (src/gateway.ts:
// src/operators/alerts/money-listener.ts). payments/ imports nothing of operators/.
import type { Context } from "hono";
import type { Tenant } from "../identity/tenants.js";
import type { BudgetWindow } from "../state/types.js";

/** An event of a tenant's money. USD amounts as decimal strings, as the alert receivers get them. */
export type MoneyEvent =
  | { type: "budget.threshold"; window: BudgetWindow; period: string; threshold: number; spent: string; limit: string }
  /** A window ran out; `onExhausted` is the tenant's policy ("stop": the listener pulls the kill switch). */
  | { type: "budget.exhausted"; window: BudgetWindow; period: string; onExhausted: string }
  /** A credits settlement above its hold, recorded whole (period: the ledger entry). */
  | {
      type: "credits.over_hold";
      window: "total";
      period: string;
      route: string;
      resource: string | null;
      held: string;
      settled: string;
      settledFrom: string;
    }
  /** An upstream report refused before it touched money; the hold settled to the estimate (period: the ledger entry). */
  | {
      type: "credits.report_refused";
      window: "total";
      period: string;
      route: string;
      resource: string | null;
      reason: string;
      field: string;
      reported: string;
      settled: string;
    }
  /**
   * An answer served from the cache or joined to a paid call in flight: what it would have cost, in atomic units (a
   * per-instance figure, announced on every such answer and counted for the console, never an alert).
   */
  | { type: "savings"; how: "hit" | "coalesced"; savedAtomic: bigint }
  /** The team's usage and the ledger's credit spend differ past credits.driftAlertUsd (period: the day it was seen). */
  | {
      type: "credits.drift";
      window: "total";
      period: string;
      driftUsd: string;
      thresholdUsd: string;
      teamUsd: string;
      ledgerUsd: string;
      /** The upstream account whose books drifted (with [[upstream.accounts]]). */
      account?: string;
    };

/**
 * Hears the money side's events. `tenant` is the tenant concerned; a fleet event (credits.drift) comes with the
 * operator pseudo-tenant `{ id: "_operator" }`. Called beside the request `c` (or outside any); the money side awaits
 * what it returns and logs a failure, so a listener may act at length (stopping a tenant's resources).
 */
export interface MoneyEvents {
  announce(tenant: Tenant, event: MoneyEvent, c?: Context): void | Promise<void>;
}

/** The pseudo-tenant fleet events are announced for (it has no receivers of its own: the global ones get them). */
export const OPERATOR = { id: "_operator", alerts: {} } as Tenant;

/**
 * An answer served from the cache (`hit`) or joined to a paid call in flight (`coalesced`): what it saved is announced
 * as a money event like the others (the operators' listener counts it for the console). Never awaited: a hit's path.
 */
export function announceSavings(
  services: { moneyEvents?: MoneyEvents },
  c: Context | undefined,
  tenant: Tenant,
  how: "hit" | "coalesced",
  savedAtomic: bigint,
): void {
  void services.moneyEvents?.announce(tenant, { type: "savings", how, savedAtomic }, c);
}
