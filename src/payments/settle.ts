// Settlement of credits holds to what the upstream reports: a session or sandbox to its `creditsUsed` × usdPerCredit
// (read at its end, and once more a little later since usage lands late; the reconciler corrects what lands later
// still), a job to the work its answer counts priced by the table (or to the credits it reports). What the upstream
// does not say is settled from the price table's estimate, and the entry says so (`settledFrom`). What it says is
// screened first (./report-screen.ts): a figure that is no finite non-negative number, or comes to more than
// credits.maxReportMultiple × the hold, is refused; the hold settles to the estimate and the entry is flagged.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { LedgerEntry } from "../state/types.js";
import {
  alertRefusedReport,
  correctSettlement,
  creditsToAtomic,
  readUpstreamJson,
  reportedCredits,
  reportedWork,
  upstreamCreditsUsed,
} from "./credit-reports.js";
import { settleCredits, type CreditHold, type CreditReport } from "./credit-ledger.js";
import { capEntryId } from "./spend.js";
import { ceilingOf, judgeReading } from "./report-screen.js";
import type { LedgerServices } from "./spend.js";

/** Settling a resource or job: the ledger, and the upstream (the usage it reports). */
type SettleServices = LedgerServices & Pick<GatewayServices, "upstream">;

/** A kept hold: its price per unit or minute (atomic, at cost). */
interface RatedHold extends CreditHold {
  rate: string;
}

/** How long after a resource ends its detail is read once more (the upstream's usage lands late). */
const LATE_READ_MS = 2_000;

const RESOURCE = /^(session|sandbox):(.+)$/;

/**
 * A session or sandbox ended: settle its hold to the upstream's `creditsUsed` × usdPerCredit, or to `estimate` (the
 * minutes it ran × the table's rate) while the upstream reports nothing yet; then read once more a little later.
 */
export async function settleEndedResource(
  services: SettleServices,
  c: Context<GatewayEnv> | undefined,
  hold: RatedHold,
  r: { kind: "session" | "sandbox"; id: string; estimate: bigint },
): Promise<void> {
  const { maxReportMultiple } = services.config.credits;
  const { usdPerCredit } = services.payments.amounts;
  const judged = judgeReading(
    await upstreamCreditsUsed(services, r.kind, r.id),
    (credits) => creditsToAtomic(credits, usdPerCredit),
    ceilingOf(maxReportMultiple, hold.amount, r.estimate),
  );
  const report: CreditReport =
    judged && "cost" in judged && judged.cost > 0n
      ? { cost: judged.cost, from: "upstream", estimate: r.estimate }
      : { cost: r.estimate, from: "estimate", estimate: r.estimate, ...(judged && "refused" in judged ? { refused: judged.refused } : {}) };
  await settleCredits(services, c, hold, report);
  const entryId = hold.ids[0]!;
  const later = new Promise((resolve) => setTimeout(resolve, LATE_READ_MS)).then(async () => {
    const e = await services.stores.ledger.get(entryId);
    if (e) await recheckResourceEntry(services, e);
  });
  services.background(
    c,
    later.catch((err) => services.logger.error("late usage read failed", { entry: entryId, error: String(err) })),
    "late usage read",
  );
}

/**
 * A job ended (completed or stopped): settle to the credits it reports, else its work count × the rate, else the hold.
 * A status answer (`…/status`, no counts) is completed by reading the job's detail once.
 */
export async function settleFinishedJob(
  services: SettleServices,
  c: Context<GatewayEnv> | undefined,
  hold: RatedHold,
  answer: Record<string, unknown>,
): Promise<void> {
  let body = answer;
  const path = c?.req.path;
  if (reportedCredits(body) === undefined && reportedWork(body) === undefined && path?.endsWith("/status"))
    body = (await readUpstreamJson(services, path.slice(0, -"/status".length))) ?? body;
  const { maxReportMultiple } = services.config.credits;
  const { usdPerCredit } = services.payments.amounts;
  const ceiling = ceilingOf(maxReportMultiple, hold.amount);
  const credits = judgeReading(reportedCredits(body), (n) => creditsToAtomic(n, usdPerCredit), ceiling);
  if (credits && "cost" in credits) {
    await settleCredits(services, c, hold, { cost: credits.cost, from: "upstream", estimate: hold.amount });
    return;
  }
  const work = credits ? undefined : judgeReading(reportedWork(body), (n) => BigInt(n) * BigInt(hold.rate), ceiling);
  if (work && "cost" in work) {
    // The count is the upstream's, the price the table's: the estimate of that same work is the figure itself.
    await settleCredits(services, c, hold, { cost: work.cost, from: "upstream", estimate: work.cost });
    return;
  }
  const refused = (credits ?? work)?.refused;
  await settleCredits(services, c, hold, { cost: hold.amount, from: "estimate", ...(refused ? { refused } : {}) });
}

/**
 * A committed session or sandbox entry read again: when the upstream's figure has landed and differs from what the
 * entry holds (or the entry was an estimate), the entry is corrected to it. True when it changed.
 */
export async function recheckResourceEntry(services: SettleServices, e: LedgerEntry, c?: Context): Promise<boolean> {
  const m = RESOURCE.exec(e.resource ?? "");
  if (!m || e.state !== "committed" || e.kind !== "credits") return false;
  const { maxReportMultiple } = services.config.credits;
  const { usdPerCredit } = services.payments.amounts;
  const held = BigInt(e.reservedAmount ?? e.amount);
  const judged = judgeReading(
    await upstreamCreditsUsed(services, m[1] as "session" | "sandbox", m[2]!),
    (credits) => creditsToAtomic(credits, usdPerCredit),
    ceilingOf(maxReportMultiple, held, BigInt(e.estimatedAmount ?? "0")),
  );
  if (judged && "refused" in judged) {
    // The entry stands as it is (its estimate, or an earlier figure), flagged once.
    if (e.refusedReport !== judged.refused.reason) await flagEntry(services, e, judged.refused.reason);
    await alertRefusedReport(services, e.id, judged.refused, c);
    return false;
  }
  const cost = judged?.cost ?? 0n;
  if (cost === 0n) return false; // not landed yet
  if (e.settledFrom === "upstream" && e.costAmount === cost.toString()) return false;
  await correctSettlement(services, e, cost, "upstream", c);
  return true;
}

/** Flags a committed entry (and a capped token's mirror) as having had a report refused; its amount is unchanged. */
async function flagEntry(services: SettleServices, e: LedgerEntry, reason: NonNullable<LedgerEntry["refusedReport"]>): Promise<void> {
  const now = services.now();
  await services.stores.ledger.resettle(e.id, BigInt(e.amount), { refusedReport: reason }, now);
  const cap = await services.stores.ledger.get(capEntryId(e.id));
  if (cap?.state === "committed") await services.stores.ledger.resettle(cap.id, BigInt(cap.amount), { refusedReport: reason }, now);
}
