// What a gateway's money side remembers between calls, built once by createGateway (paymentsMemory) and hung on its
// services as `services.payments`: typed and visible, one per gateway, never in a module. Each part is bounded and is
// only ever a shortcut: the ledger and the shared state decide, this instance remembers what it saw of them lately.
import { LRUCache } from "lru-cache";
import type { TollgateConfig } from "../../config/schema.js";
import { type ConfigAmounts, configAmounts } from "./amounts.js";
import type { PaymentOption } from "./requirements.js";
import type { BudgetWindow, Usage } from "../state/types.js";

/** A tenant's spend per window as last read, and when (limits are applied when shown: they may change). */
export interface RememberedSpend {
  used: Pick<Usage, BudgetWindow>;
  at: number;
  reading?: boolean;
}

export interface PaymentsMemory {
  /** The configuration's money, parsed once (src/payments/amounts.ts). */
  readonly amounts: ConfigAmounts;
  /**
   * Tenants found stopped (the exhausted mark of a window is never taken back before the window resets, so a stopped
   * tenant's next calls are refused with no state round trip and no ledger write) (src/payments/spend.ts).
   */
  readonly stopped: LRUCache<string, { window: BudgetWindow; period: string }>;
  /** Tokens whose cap refused a call lately: their next calls reserve the cap first (src/payments/spend.ts). */
  readonly capRefused: LRUCache<string, true>;
  /**
   * The option this instance last paid per route and wallet, whichever tenant paid it: what the route's next miss
   * reserves ahead (src/payments/paid-ahead.ts).
   */
  readonly lastPaid: LRUCache<string, PaymentOption>;
  /** Budget-threshold markers seen taken (by this instance or another): skipped until their window ends (budgets/thresholds.ts). */
  readonly thresholdsTaken: LRUCache<string, true>;
  /** Each tenant's spend as last read, for the answers' budget-remaining figure (budgets/remaining.ts). */
  readonly remaining: Map<string, RememberedSpend>;
  /** Releases the store could not take, by ledger id (their reason): retried on each reconciler pass (abandoned.ts). */
  readonly pendingReleases: Map<string, string>;
  /** Permit2 allowances found sufficient, by network|asset|owner, until when (permit2-approval.ts). */
  readonly permit2Approved: Map<string, number>;
}

/** A gateway's money memory, empty, with its configuration's amounts parsed now. */
export function paymentsMemory(config: TollgateConfig): PaymentsMemory {
  return {
    amounts: configAmounts(config),
    stopped: new LRUCache({ max: 10_000, ttl: 60_000 }),
    capRefused: new LRUCache({ max: 10_000, ttl: 60_000 }),
    lastPaid: new LRUCache({ max: 4096 }),
    thresholdsTaken: new LRUCache({ max: 10_000, ttlAutopurge: false }),
    remaining: new Map(),
    pendingReleases: new Map(),
    permit2Approved: new Map(),
  };
}
