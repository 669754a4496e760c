// Settles holds nobody settled. x402: from the chain's truth once the authorization has expired (used → committed,
// unused → released). Credits: once the resource's end time has passed it ran to its maximum, so the hold is committed
// at the reserved amount (an estimate); sessions and sandboxes settled from an estimate are read again until the
// upstream's figure lands, and corrected to it; and the team's usage is compared with the ledger (./credit-drift.ts).
// The chain is asked through the entry's payment scheme (src/payments/schemes/). Runs on a timer in Node and from the
// Worker's cron trigger (src/host/worker.ts).
import type { GatewayServices } from "../services.js";
import { schemeOfEntry } from "./schemes/index.js";
import { retryReleases } from "./abandoned.js";
import { afterCreditSettlement } from "./credit-reports.js";
import { checkCreditDrift, type CreditDrift } from "./credit-drift.js";
import { recheckResourceEntry } from "./settle.js";
import type { LedgerEntry } from "../state/types.js";
import { usdToAtomic } from "./money.js";
import { stateKeys } from "../state/keys.js";

/** The settlement transaction an entry held as `settlement pending` names in its reason (src/payments/payer.ts). */
const PENDING_TX = /\(transaction (0x[0-9a-fA-F]{64})\)/;

/** Grace after validBefore before the chain is asked (a settlement mined at the last second must be visible). */
const GRACE_SECONDS = 5;
/** How many holds of each kind one pass looks at. */
const BATCH = 500;

export interface ReconcileReport {
  /** x402 holds found used on chain. */
  committed: number;
  /** x402 holds found unused on chain, or never signed; and releases the store could not take before (abandoned.ts). */
  released: number;
  /** x402 holds that could not be decided this time (no RPC for the network, RPC error). */
  stillHeld: number;
  /** Credits holds past their end time, committed at the reserved amount. */
  creditsCommitted: number;
  /** Sessions and sandboxes settled from an estimate whose upstream figure has since landed, corrected to it. */
  creditsCorrected: number;
  /** The drift check (undefined when credits are off or the team's usage could not be read). */
  creditsDrift?: CreditDrift;
  /** With [sales]: sales checked against the chain this pass, and those it does not show (src/sales/reconcile.ts). */
  salesInbound?: { checked: number; mismatches: number };
  /** With [sales]: sales due at a time settled (or found settled) this pass, and those left for the next (src/sales/due.ts). */
  salesDue?: { done: number; failed: number };
}

/** How many settled credits entries one pass looks at for late usage. */
const LATE_BATCH = 500;
/** An entry settled from the upstream's figure is read once more no sooner than this after. */
const RECHECK_AFTER_MS = 60_000;

/** An entry's amount before the tenant's multiplier (what the upstream is estimated to have charged). */
function costOf(e: LedgerEntry): bigint {
  const amount = BigInt(e.amount);
  if (!e.multiplier) return amount;
  return (amount * 1_000_000n) / usdToAtomic(e.multiplier);
}

export class PaymentReconciler {
  constructor(private readonly services: GatewayServices) {}

  async runOnce(): Promise<ReconcileReport> {
    const { stores, logger } = this.services;
    const now = this.services.now();
    const report: ReconcileReport = { committed: 0, released: 0, stillHeld: 0, creditsCommitted: 0, creditsCorrected: 0 };
    report.released += await retryReleases(this.services);
    await this.settleCredits(now, report);
    if (this.services.config.credits.enabled) {
      await this.correctLateUsage(now, report);
      report.creditsDrift = await checkCreditDrift(this.services).catch((err) => {
        logger.error("credit drift check failed", { error: String(err) });
        return undefined;
      });
    }
    if (this.services.config.payments.enabled) await this.settlePendingEarly(now, report);
    // Sales due at a time (a time sale's window end), settled once across the fleet, before the books are checked.
    const due = await this.services.sales?.due.runOnce().catch((err) => {
      logger.error("due sales sweep failed; will retry", { error: String(err) });
      return undefined;
    });
    if (due) report.salesDue = due;
    // Jobs sold to wallets (src/sales/job-sales.ts): each pending one followed once more, settled if it ended.
    await this.services.sales?.jobs?.settleDue(now).catch((err) => logger.error("job sales sweep failed", { error: String(err) }));
    // The inbound side of the books (what wallet buyers paid the gateway), in the same pass.
    const inbound = await this.services.sales?.inbound.runOnce().catch((err) => {
      logger.error("inbound reconciliation failed; will retry", { error: String(err) });
      return undefined;
    });
    if (inbound) report.salesInbound = { checked: inbound.checked, mismatches: inbound.mismatches.length };
    for (const e of await stores.ledger.expiredHolds(now, BATCH)) {
      if (e.validBefore && (e.validBefore + GRACE_SECONDS) * 1000 > now) continue;
      if (!e.nonce || !e.payer) {
        await stores.ledger.release(e.id, "never signed (reservation abandoned)", now);
        report.released++;
        continue;
      }
      const scheme = schemeOfEntry(e);
      try {
        const verdict = scheme ? await scheme.verdict(e, this.services.config.payments.rpc) : "no-rpc";
        if (verdict === "no-rpc") {
          report.stillHeld++;
          logger.error("cannot reconcile a held payment: no RPC for its network", { entry: e.id, network: e.network });
          continue;
        }
        const used = verdict === "used";
        if (used) {
          // The settlement's transaction, when known: an upto entry is committed at what it moved, not its maximum.
          const transaction = e.transaction ?? PENDING_TX.exec(e.reason ?? "")?.[1];
          const moved =
            transaction && scheme?.settledOnChain
              ? await scheme.settledOnChain(e, transaction, this.services.config.payments.rpc)
              : undefined;
          const finalAmount = moved !== undefined && moved <= BigInt(e.amount) ? moved : undefined;
          await stores.ledger.commit(e.id, transaction, now, finalAmount);
          report.committed++;
        } else {
          await stores.ledger.release(e.id, "authorization expired unused (checked on chain)", now);
          report.released++;
        }
        logger.info("payment reconciled", { entry: e.id, tenant: e.tenant, outcome: used ? "committed" : "released" });
      } catch (err) {
        report.stillHeld++;
        logger.error("reconciliation failed; will retry", { entry: e.id, error: String(err) });
      }
    }
    return report;
  }

  /**
   * A used authorization is committed: with the settlement's transaction when known (the payer names it in the hold's
   * reason), an upto entry at what that transaction moved, not its maximum.
   */
  private async commitUsed(e: LedgerEntry, scheme: ReturnType<typeof schemeOfEntry>, now: number) {
    const transaction = e.transaction ?? PENDING_TX.exec(e.reason ?? "")?.[1];
    const moved =
      transaction && scheme?.settledOnChain ? await scheme.settledOnChain(e, transaction, this.services.config.payments.rpc) : undefined;
    const finalAmount = moved !== undefined && moved <= BigInt(e.amount) ? moved : undefined;
    await this.services.stores.ledger.commit(e.id, transaction, now, finalAmount);
  }

  /**
   * Payments held as `settlement pending` are asked of the chain on every pass, not only once they lapse: as soon as
   * their authorization shows used they are committed. Unused ones wait for validBefore (the seller's transaction may
   * still land, or another one use the authorization), then the pass below releases them.
   */
  private async settlePendingEarly(now: number, report: ReconcileReport) {
    const { stores, logger } = this.services;
    const pending = (await stores.ledger.list({ state: "uncertain", kind: "x402", limit: BATCH })).filter(
      (e) => e.nonce && e.payer && PENDING_TX.test(e.reason ?? "") && (!e.validBefore || e.validBefore * 1000 > now),
    );
    for (const e of pending) {
      const scheme = schemeOfEntry(e);
      try {
        if (!scheme || (await scheme.verdict(e, this.services.config.payments.rpc)) !== "used") continue;
        await this.commitUsed(e, scheme, now);
        report.committed++;
        logger.info("payment reconciled", { entry: e.id, tenant: e.tenant, outcome: "committed", early: true });
      } catch (err) {
        logger.error("reconciliation of a pending settlement failed; will retry", { entry: e.id, error: String(err) });
      }
    }
  }

  /** Credits holds whose resource can no longer be running: the upstream billed it up to its maximum. */
  private async settleCredits(now: number, report: ReconcileReport) {
    const { stores, logger } = this.services;
    for (const e of await stores.ledger.expiredCreditHolds(now - GRACE_SECONDS * 1000, BATCH)) {
      try {
        const cost = costOf(e);
        await stores.ledger.commit(e.id, undefined, now, undefined, {
          settledFrom: "estimate",
          costAmount: cost.toString(),
          estimatedAmount: cost.toString(),
        });
        if (!e.tenant.startsWith("token:"))
          await afterCreditSettlement(this.services, undefined, {
            entryId: e.id,
            tenant: e.tenant,
            route: e.route,
            charged: BigInt(e.amount),
            cost,
            overHold: false,
          });
        report.creditsCommitted++;
        logger.info("credits hold expired; committed at its maximum", {
          entry: e.id,
          tenant: e.tenant,
          amount: e.amount,
          resource: e.resource,
        });
      } catch (err) {
        logger.error("credits reconciliation failed; will retry", { entry: e.id, error: String(err) });
      }
    }
  }

  /**
   * Sessions and sandboxes settled within credits.lateUsageMinutes: one settled from an estimate is read again on every
   * pass until the upstream's figure lands; one settled from the upstream's figure is read once more (fleet-wide) a
   * minute or more after, in case more of its usage landed. Either is corrected to what the upstream now says.
   */
  private async correctLateUsage(now: number, report: ReconcileReport) {
    const { stores, logger, config } = this.services;
    const windowMs = config.credits.lateUsageMinutes * 60_000;
    const recent = await stores.ledger.list({ kind: "credits", limit: LATE_BATCH });
    for (const e of recent) {
      if (e.state !== "committed" || e.updatedAt < now - windowMs || e.tenant.startsWith("token:")) continue;
      if (!/^(session|sandbox):/.test(e.resource ?? "")) continue;
      if (e.settledFrom === "upstream") {
        if (e.updatedAt > now - RECHECK_AFTER_MS) continue;
        if (!(await stores.kv.setIfAbsent(stateKeys.creditsRechecked(e.id), this.services.instanceId, windowMs))) continue;
      } else if (e.settledFrom !== "estimate") continue;
      try {
        if (await recheckResourceEntry(this.services, e)) report.creditsCorrected++;
      } catch (err) {
        logger.error("late usage correction failed; will retry", { entry: e.id, error: String(err) });
      }
    }
  }

  /** Runs periodically until the gateway closes (Node). */
  start(intervalMs: number): () => void {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      const pass = this.runOnce()
        .catch((err) => this.services.logger.error("reconciler error", { error: String(err) }))
        .finally(() => (running = false));
      this.services.background(undefined, pass, "reconciler pass"); // closing the gateway lets a pass finish
    }, intervalMs);
    (timer as { unref?: () => void }).unref?.(); // Node timers; Workers have none
    return () => clearInterval(timer);
  }
}
