// The books against the bill: each reconciler pass reads the team's credit usage from the upstream and compares how
// much it grew with how much credit spend the ledger settled (at cost) over the same time. The difference is work the
// gateway did not see (a console action on the real service, another client on the same account) or a price
// mismatch; it is published as tollgate_credits_drift_usd, kept in shared state for /_tollgate/ready and the admin
// usage view, and alerted once past credits.driftAlertUsd (again only after it went back under).
import type { GatewayServices } from "../services.js";
import { stateKeys } from "../state/keys.js";
import { OPERATOR } from "./events.js";
import { atomicToUsd } from "./money.js";
import { creditsToAtomic, settledCostSoFar, teamCreditsUsed } from "./credit-reports.js";

/** What the drift check last saw. USD amounts as decimal strings; `driftUsd` signed (positive: the bill is larger). */
export interface CreditDrift {
  driftUsd: string;
  /** Growth of the team's usage since the check started, in USD at usdPerCredit. */
  teamUsd: string;
  /** Credit spend the ledger settled over the same time, at cost. */
  ledgerUsd: string;
  thresholdUsd: string;
  alerting: boolean;
  since: string;
  at: string;
  /** With several upstream accounts: each account's own books against its own bill (the figures above are their sums). */
  accounts?: Record<string, Omit<CreditDrift, "accounts">>;
}

interface Baseline {
  /** The team's usage in credits, as the upstream reported it. */
  credits: number;
  /** The settled cost counter, atomic. */
  settled: string;
  at: number;
}

const KEEP_MS = 400 * 24 * 3_600_000;

const signedUsd = (atomic: bigint) => (atomic < 0n ? `-${atomicToUsd(-atomic)}` : atomicToUsd(atomic));

/** The drift figure in atomic units (signed), for a baseline and the current readings. */
function driftOf(base: Baseline, credits: number, settled: bigint, usdPerCredit: bigint) {
  const team = creditsToAtomic(credits, usdPerCredit) - creditsToAtomic(base.credits, usdPerCredit);
  const ledger = settled - BigInt(base.settled);
  return { team, ledger, drift: team - ledger };
}

/**
 * One drift check: undefined when the upstream's usage cannot be read. The first check anywhere in the fleet sets
 * the baseline (drift 0); later ones compare against it.
 */
export async function checkCreditDrift(services: GatewayServices): Promise<CreditDrift | undefined> {
  const accounts = services.upstream.accounts;
  if (accounts?.configured)
    return checkAccountsDrift(
      services,
      accounts.list.map((a) => a.id),
    );
  const { kv } = services.stores;
  const credits = await teamCreditsUsed(services);
  if (credits === undefined) return undefined; // no upstream key, or it is down: readiness reports that
  const settled = await settledCostSoFar(services);
  const now = services.now();
  const fresh: Baseline = { credits, settled: settled.toString(), at: now };
  await kv.setIfAbsent(stateKeys.creditsDrift("baseline"), JSON.stringify(fresh), KEEP_MS);
  const base = JSON.parse((await kv.get(stateKeys.creditsDrift("baseline"))) ?? JSON.stringify(fresh)) as Baseline;
  const d = driftOf(base, credits, settled, services.payments.amounts.usdPerCredit);
  return publishDrift(services, base, now, d);
}

/**
 * With several upstream accounts: each account's usage (its key's credit-info) against the ledger's spend settled on
 * it, each with its own baseline and its own alert naming the account; the report's figures are their sums. Undefined
 * when an account's usage cannot be read (that account is down: its breaker and readiness say so).
 */
async function checkAccountsDrift(services: GatewayServices, ids: string[]): Promise<CreditDrift | undefined> {
  const { kv } = services.stores;
  const now = services.now();
  const { usdPerCredit } = services.payments.amounts;
  const total = { team: 0n, ledger: 0n, drift: 0n };
  const per: Record<string, Omit<CreditDrift, "accounts">> = {};
  let since = now;
  for (const id of ids) {
    const credits = await teamCreditsUsed(services, id);
    if (credits === undefined) return undefined;
    const settled = await settledCostSoFar(services, id);
    const fresh: Baseline = { credits, settled: settled.toString(), at: now };
    await kv.setIfAbsent(stateKeys.creditsDrift("baseline", id), JSON.stringify(fresh), KEEP_MS);
    const base = JSON.parse((await kv.get(stateKeys.creditsDrift("baseline", id))) ?? JSON.stringify(fresh)) as Baseline;
    const d = driftOf(base, credits, settled, usdPerCredit);
    per[id] = await publishDrift(services, base, now, d, id);
    total.team += d.team;
    total.ledger += d.ledger;
    total.drift += d.drift;
    since = Math.min(since, base.at);
  }
  const { driftAlert: threshold } = services.payments.amounts;
  const report: CreditDrift = {
    driftUsd: signedUsd(total.drift),
    teamUsd: signedUsd(total.team),
    ledgerUsd: signedUsd(total.ledger),
    thresholdUsd: atomicToUsd(threshold),
    alerting: Object.values(per).some((r) => r.alerting),
    since: new Date(since).toISOString(),
    at: new Date(now).toISOString(),
    accounts: per,
  };
  services.metrics.creditsDriftUsd(Number(total.drift) / 1e6);
  await kv.set(stateKeys.creditsDrift("last"), JSON.stringify(report), KEEP_MS);
  return report;
}

/** One set of books checked: its report kept (the whole fleet's, or one account's) and alerted once past the threshold. */
async function publishDrift(
  services: GatewayServices,
  base: Baseline,
  now: number,
  d: { team: bigint; ledger: bigint; drift: bigint },
  account?: string,
): Promise<CreditDrift> {
  const { kv } = services.stores;
  const { driftAlert: threshold } = services.payments.amounts;
  const over = (d.drift < 0n ? -d.drift : d.drift) > threshold;
  const report: CreditDrift = {
    driftUsd: signedUsd(d.drift),
    teamUsd: signedUsd(d.team),
    ledgerUsd: signedUsd(d.ledger),
    thresholdUsd: atomicToUsd(threshold),
    alerting: over,
    since: new Date(base.at).toISOString(),
    at: new Date(now).toISOString(),
  };
  if (account === undefined) {
    services.metrics.creditsDriftUsd(Number(d.drift) / 1e6);
    await kv.set(stateKeys.creditsDrift("last"), JSON.stringify(report), KEEP_MS);
  }
  if (!over) {
    await kv.delete(stateKeys.creditsDrift("alerted", account));
    return report;
  }
  if (await kv.setIfAbsent(stateKeys.creditsDrift("alerted", account), services.instanceId, KEEP_MS)) {
    services.logger.error("credit spend drifted from the team's usage", {
      ...(account !== undefined ? { account } : {}),
      driftUsd: report.driftUsd,
      thresholdUsd: report.thresholdUsd,
    });
    // Not one tenant's event: it goes to the global receivers (an operator pseudo-tenant with no receivers of its own).
    await services.moneyEvents?.announce(OPERATOR, {
      type: "credits.drift",
      window: "total",
      period: report.at.slice(0, 10),
      driftUsd: report.driftUsd,
      thresholdUsd: report.thresholdUsd,
      teamUsd: report.teamUsd,
      ledgerUsd: report.ledgerUsd,
      ...(account !== undefined ? { account } : {}),
    });
  }
  return report;
}

/** The last drift check's figures (any instance's), or undefined before the first. */
export async function lastCreditDrift(services: GatewayServices): Promise<CreditDrift | undefined> {
  const raw = await services.stores.kv.get(stateKeys.creditsDrift("last"));
  return raw ? (JSON.parse(raw) as CreditDrift) : undefined;
}
