// The gauges read from the ledger at scrape time: budget spent and remaining per tenant and window, the amounts held in
// uncertain payments, and whether the state backend answered. Part of the gateway's metric set (./gateway-metrics.ts),
// which refreshes them before each scrape.
import type { TenantDirectory } from "../identity/tenants.js";
import type { StateStores } from "../state/types.js";
import { limitsOf, remainingOf } from "../payments/index.js";
import type { GaugeChild, MetricFamily, MetricsRegistry } from "./types.js";

const WINDOWS = ["daily", "monthly", "total"] as const;
const HELD_SCAN_LIMIT = 1000;

const usd = (atomic: bigint) => Number(atomic) / 1e6;

export class LedgerGauges {
  private readonly budgetRemaining: MetricFamily<GaugeChild>;
  private readonly budgetSpent: MetricFamily<GaugeChild>;
  private readonly heldUsd: MetricFamily<GaugeChild>;
  private readonly heldCount: MetricFamily<GaugeChild>;
  private readonly stateUp: MetricFamily<GaugeChild>;

  /** `stateError`: counts a scrape the state backend failed (tollgate_state_errors_total). */
  constructor(
    r: MetricsRegistry,
    private readonly stateError: () => void,
  ) {
    this.budgetRemaining = r.gauge({
      name: "tollgate_budget_remaining_usd",
      help: "Budget left per tenant and window (only windows with a limit), read from the ledger at scrape time.",
      labelNames: ["tenant", "window"],
    });
    this.budgetSpent = r.gauge({
      name: "tollgate_budget_spent_usd",
      help: "Reserved, held and committed spend per tenant and window, read from the ledger at scrape time.",
      labelNames: ["tenant", "window"],
    });
    this.heldUsd = r.gauge({
      name: "tollgate_payments_held_usd",
      help: "USD held in uncertain payments (outcome unknown until the chain says), per tenant, at scrape time.",
      labelNames: ["tenant"],
    });
    this.heldCount = r.gauge({
      name: "tollgate_payments_held",
      help: "Uncertain payments held, per tenant, at scrape time.",
      labelNames: ["tenant"],
    });
    this.stateUp = r.gauge({
      name: "tollgate_state_up",
      help: "1 when the state backend answered the scrape's ping, else 0.",
      labelNames: [],
    });
  }

  /** Refreshes the gauges from the ledger: budget spent and remaining per window, held amounts. */
  async collect(stores: StateStores, directory: TenantDirectory, now: number): Promise<void> {
    try {
      await stores.ping();
      this.stateUp.labels().set(1);
    } catch {
      this.stateUp.labels().set(0);
      this.stateError();
      this.reset(); // no figure rather than a stale one
      return;
    }
    try {
      const rows: Array<[string, string, number, number | undefined]> = [];
      const tenants = directory.list();
      const usages = await Promise.all(tenants.map((t) => stores.ledger.usage(t.id, now)));
      tenants.forEach((t, i) => {
        const used = usages[i]!;
        const limits = limitsOf(t);
        for (const w of WINDOWS) {
          const l = limits[w];
          rows.push([t.id, w, usd(used[w]), l === undefined ? undefined : usd(remainingOf(l, used[w]))]);
        }
      });
      const held = new Map<string, { amount: bigint; count: number }>();
      for (const t of directory.list()) held.set(t.id, { amount: 0n, count: 0 });
      for (const e of await stores.ledger.list({ state: "uncertain", limit: HELD_SCAN_LIMIT })) {
        if (e.tenant.startsWith("token:")) continue; // a keyless token's own cap entry mirrors its tenant's
        const h = held.get(e.tenant) ?? { amount: 0n, count: 0 };
        h.amount += BigInt(e.amount);
        h.count++;
        held.set(e.tenant, h);
      }
      this.reset();
      for (const [tenant, window, spent, remaining] of rows) {
        this.budgetSpent.labels(tenant, window).set(spent);
        if (remaining !== undefined) this.budgetRemaining.labels(tenant, window).set(remaining);
      }
      for (const [tenant, h] of held) {
        this.heldUsd.labels(tenant).set(usd(h.amount));
        this.heldCount.labels(tenant).set(h.count);
      }
    } catch {
      this.stateError();
      this.reset();
    }
  }

  private reset(): void {
    this.budgetSpent.reset();
    this.budgetRemaining.reset();
    this.heldUsd.reset();
    this.heldCount.reset();
  }
}
