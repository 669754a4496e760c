// Settlement of credits holds to what the upstream reports: a session or sandbox to its `creditsUsed` × usdPerCredit
// (read at its end, and once more a little later since usage lands late; the reconciler corrects what lands later
// still), a job to the work its answer counts priced by the table (or to the credits it reports). What the upstream
// does not say is settled from the price table's estimate, and the entry says so (`settledFrom`).
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { LedgerEntry } from "../state/types.js";
import {
  correctSettlement,
  creditsToAtomic,
  readUpstreamJson,
  reportedCredits,
  reportedWork,
  upstreamCreditsUsed,
} from "./credit-reports.js";
import { settleCredits, type CreditHold } from "./credit-ledger.js";
import type { LedgerServices } from "./spend.js";
import { configAmounts } from "./amounts.js";

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
  const credits = await upstreamCreditsUsed(services, r.kind, r.id);
  const reported = credits === undefined ? 0n : creditsToAtomic(credits, configAmounts(services.config).usdPerCredit);
  const from = reported > 0n ? "upstream" : "estimate";
  await settleCredits(services, c, hold, { cost: from === "upstream" ? reported : r.estimate, from, estimate: r.estimate });
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
  const credits = reportedCredits(body);
  if (credits !== undefined) {
    const cost = creditsToAtomic(credits, configAmounts(services.config).usdPerCredit);
    await settleCredits(services, c, hold, { cost, from: "upstream", estimate: hold.amount });
    return;
  }
  const work = reportedWork(body);
  if (work !== undefined) {
    // The count is the upstream's, the price the table's: the estimate of that same work is the figure itself.
    const cost = BigInt(work) * BigInt(hold.rate);
    await settleCredits(services, c, hold, { cost, from: "upstream", estimate: cost });
    return;
  }
  await settleCredits(services, c, hold, { cost: hold.amount, from: "estimate" });
}

/**
 * A committed session or sandbox entry read again: when the upstream's figure has landed and differs from what the
 * entry holds (or the entry was an estimate), the entry is corrected to it. True when it changed.
 */
export async function recheckResourceEntry(services: SettleServices, e: LedgerEntry, c?: Context): Promise<boolean> {
  const m = RESOURCE.exec(e.resource ?? "");
  if (!m || e.state !== "committed" || e.kind !== "credits") return false;
  const credits = await upstreamCreditsUsed(services, m[1] as "session" | "sandbox", m[2]!);
  const cost = credits === undefined ? 0n : creditsToAtomic(credits, configAmounts(services.config).usdPerCredit);
  if (cost === 0n) return false; // not landed yet
  if (e.settledFrom === "upstream" && e.costAmount === cost.toString()) return false;
  await correctSettlement(services, e, cost, "upstream", c);
  return true;
}
