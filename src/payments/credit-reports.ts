// What the upstream reports about credit spend, and the books kept to match it: a resource's `creditsUsed` and a job's
// work counts turned into settlements (settledFrom "upstream", else the price table's "estimate"), the tenant's price
// multiplier, a settlement above its hold alerted, late figures corrected, and the running cost the drift check
// compares with the team's usage (./credit-drift.ts).
import type { Context } from "hono";
import type { GatewayServices } from "../services.js";
import type { LedgerEntry, ResourceKind, SettledFrom } from "../state/types.js";
import { stateKeys } from "../state/keys.js";
import { checkBudget } from "./budgets/thresholds.js";
import { atomicToUsd, usdToAtomic } from "./money.js";
import { ONE, tenantAmounts } from "./amounts.js";
import type { Tenant } from "../identity/tenants.js";
import { firstReading, readFigure, refusal, type Reading, type RefusedReport } from "./report-screen.js";
import { parseUpstreamJson } from "../upstream/records.js";
import { capEntryId, type LedgerServices } from "./spend.js";

/** The running settled cost counter lives this long without a write (it is read each reconciler pass). */
const COUNTER_TTL_MS = 400 * 24 * 3_600_000;

/**
 * `credits` (as the upstream reports them, a decimal number) in atomic USD at `usdPerCredit`, rounded half up. Never
 * throws: a figure too large for millionths in a double (1e303) is converted whole (./report-screen.ts refuses it).
 */
export function creditsToAtomic(credits: number, usdPerCredit: bigint | string): bigint {
  if (!Number.isFinite(credits) || credits <= 0) return 0n;
  const scaled = credits * 1e6;
  const millionths = Number.isFinite(scaled) ? BigInt(Math.round(scaled)) : BigInt(Math.round(credits)) * 1_000_000n;
  const rate = typeof usdPerCredit === "string" ? usdToAtomic(usdPerCredit) : usdPerCredit;
  return (millionths * rate + 500_000n) / ONE;
}

/**
 * An amount with a tenant's multiplier applied, rounded up to the atomic unit; unchanged without one. The multiplier
 * as a tenant's parsed amounts hold it (millionths), or as a ledger entry or kept hold recorded it ("1.25").
 */
export function withMultiplier(amount: bigint, multiplier: bigint | string | undefined): bigint {
  if (multiplier === undefined || multiplier === "" || amount === 0n) return amount;
  return (amount * (typeof multiplier === "string" ? usdToAtomic(multiplier) : multiplier) + 999_999n) / ONE;
}

/** A multiplier worth recording: undefined for none or exactly 1 (as parsed when the tenant was taken in). */
export function multiplierOf(tenant: Pick<Tenant, "creditMultiplier">): string | undefined {
  return tenantAmounts(tenant).creditMultiplier === undefined ? undefined : tenant.creditMultiplier;
}

/** The upstream answer at `path` (control plane, the operator's key) as a JSON object; undefined on any failure. */
export async function readUpstreamJson(
  services: Pick<GatewayServices, "upstream" | "config">,
  path: string,
): Promise<Record<string, unknown> | undefined> {
  const read = await readUpstreamAnswer(services, path);
  return read === "unreadable" ? undefined : read;
}

/**
 * The upstream answer at `path` as a JSON object; "unreadable" when it answered 2xx with something else (a report
 * the books refuse), undefined when it could not be read (unreachable, an error status: nothing said yet).
 */
async function readUpstreamAnswer(
  services: Pick<GatewayServices, "upstream" | "config">,
  path: string,
  account?: string,
): Promise<Record<string, unknown> | "unreadable" | undefined> {
  const { upstream } = services;
  try {
    const res = await upstream.transport.request({
      url: `${upstream.origin}${path}`,
      method: "GET",
      headers: await upstream.headersFor(`credits-${crypto.randomUUID()}`, path, account),
      signal: AbortSignal.timeout(services.config.upstream.timeoutMs),
    });
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      return undefined;
    }
    const text = await res.text(); // a body that fails to arrive is nothing said (the outer catch), not a bad report
    let body: unknown;
    try {
      body = parseUpstreamJson(text);
    } catch {
      return "unreadable";
    }
    return body && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : "unreadable";
  } catch {
    return undefined;
  }
}

const DETAIL_PATH = { session: "/api/session/", sandbox: "/api/sandbox/" } as const;

/**
 * A session's or sandbox's `creditsUsed` as the upstream reports it now: undefined when it says nothing (yet), refused
 * when what it says is no figure (./report-screen.ts).
 */
export async function upstreamCreditsUsed(
  services: Pick<GatewayServices, "upstream" | "config">,
  kind: "session" | "sandbox",
  id: string,
): Promise<Reading> {
  const body = await readUpstreamAnswer(services, `${DETAIL_PATH[kind]}${encodeURIComponent(id)}`);
  if (body === "unreadable") return refusal("unreadable", "creditsUsed", undefined);
  return readFigure("creditsUsed", body?.creditsUsed);
}

/**
 * The team's credit usage so far (`GET /api/team/credit-info`), or undefined when it cannot be read; of one upstream
 * account (its key's) when `account` is given.
 */
export async function teamCreditsUsed(
  services: Pick<GatewayServices, "upstream" | "config">,
  account?: string,
): Promise<number | undefined> {
  const read = await readUpstreamAnswer(services, "/api/team/credit-info", account);
  const v = read === "unreadable" ? undefined : read?.usage;
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/**
 * The cost (before multipliers) of every credit settlement so far, fleet-wide, in atomic units; of one upstream
 * account's spend when `account` is given.
 */
export async function settledCostSoFar(services: Pick<GatewayServices, "stores">, account?: string): Promise<bigint> {
  const key = account === undefined ? stateKeys.creditsSettledCost : stateKeys.creditsSettledCostOf(account);
  return BigInt(await services.stores.kv.incrBy(key, 0, COUNTER_TTL_MS));
}

/**
 * With several upstream accounts: the account a settled entry's spend went to. A resource's (its custody record),
 * else the account the request went to, else the default one; remembered for the usage export.
 */
async function accountOfSettlement(services: LedgerServices, c: Context | undefined, entryId: string): Promise<string | undefined> {
  const accounts = (services as Partial<Pick<GatewayServices, "upstream">>).upstream?.accounts;
  if (!accounts?.configured) return undefined;
  const kept = await services.stores.kv.get(stateKeys.creditsEntryAccount(entryId));
  if (kept) return kept;
  const resource = (await services.stores.ledger.get(entryId))?.resource;
  const at = resource?.indexOf(":") ?? -1;
  const held = resource && at > 0 ? await accounts.accountOf(resource.slice(0, at) as ResourceKind, resource.slice(at + 1)) : undefined;
  const account = held ?? c?.get("upstreamAccount") ?? accounts.defaultId;
  await services.stores.kv.set(stateKeys.creditsEntryAccount(entryId), account, COUNTER_TTL_MS);
  return account;
}

/** The upstream account of a credit-settled entry, when several are configured and it settled (the usage export). */
export async function settledEntryAccount(services: Pick<GatewayServices, "stores">, entryId: string): Promise<string | undefined> {
  return services.stores.kv.get(stateKeys.creditsEntryAccount(entryId));
}

/**
 * The work count a finished job's answer reports (pages scraped, steps completed; the first field present decides),
 * refused when it is no figure, or undefined when it reports none.
 */
export function reportedWork(body: Record<string, unknown>): Reading {
  const meta = body.metadata && typeof body.metadata === "object" ? (body.metadata as Record<string, unknown>) : {};
  const r = firstReading([
    ["metadata.numPagesScraped", meta.numPagesScraped],
    ["metadata.numTaskStepsCompleted", meta.numTaskStepsCompleted],
    ["totalCrawledPages", body.totalCrawledPages],
    ["totalScrapedPages", body.totalScrapedPages],
    ["totalPages", body.totalPages],
    ["pagesCount", body.pagesCount],
  ]);
  if (r) return "figure" in r ? { ...r, figure: Math.floor(r.figure) } : r;
  const steps = (body.data as { steps?: unknown } | null | undefined)?.steps;
  return Array.isArray(steps) ? { figure: steps.length, field: "data.steps" } : undefined;
}

/** Credits a job answer reports for itself (`creditsUsed` at the top or in its metadata): a reading, as above. */
export function reportedCredits(body: Record<string, unknown>): Reading {
  const meta = body.metadata && typeof body.metadata === "object" ? (body.metadata as Record<string, unknown>) : {};
  return firstReading([
    ["creditsUsed", body.creditsUsed],
    ["metadata.creditsUsed", meta.creditsUsed],
  ]);
}

/**
 * After a credits settlement (or correction) reached the ledger: the counter beside the x402 ones, the fleet's
 * running cost for the drift check, and an alert when the tenant's entry now stands above what was held for it.
 * Never throws.
 */
export async function afterCreditSettlement(
  services: LedgerServices,
  c: Context | undefined,
  x: { entryId: string; tenant: string; route: string; charged: bigint; cost: bigint; overHold?: boolean },
): Promise<void> {
  try {
    services.metrics.creditsSpent(x.tenant, x.route, x.charged);
    if (x.cost !== 0n) await services.stores.kv.incrBy(stateKeys.creditsSettledCost, Number(x.cost), COUNTER_TTL_MS);
    const account = await accountOfSettlement(services, c, x.entryId);
    if (account !== undefined && x.cost !== 0n)
      await services.stores.kv.incrBy(stateKeys.creditsSettledCostOf(account), Number(x.cost), COUNTER_TTL_MS);
    if (x.overHold === false) return; // held to its reservation: it cannot stand above it
    const e = await services.stores.ledger.get(x.entryId);
    if (e && e.reservedAmount !== undefined && BigInt(e.amount) > BigInt(e.reservedAmount)) await alertOverHold(services, e, c);
  } catch (err) {
    services.logger.error("credit settlement bookkeeping failed", { entry: x.entryId, error: String((err as Error)?.message ?? err) });
  }
}

/** One alert per entry (fleet-wide) that settled above its hold: recorded whole, counted against the budget. */
async function alertOverHold(services: LedgerServices, e: LedgerEntry, c: Context | undefined): Promise<void> {
  const tenant = services.directory.get(e.tenant);
  if (!tenant) return;
  const won = await services.stores.kv.setIfAbsent(stateKeys.creditsOverHold(e.id), services.instanceId, 7 * 24 * 3_600_000);
  if (!won) return;
  services.logger.info("credit settlement above its hold", { entry: e.id, tenant: e.tenant, route: e.route, amount: e.amount });
  await services.moneyEvents?.announce(
    tenant,
    {
      type: "credits.over_hold",
      window: "total",
      period: e.id,
      route: e.route,
      resource: e.resource ?? null,
      held: atomicToUsd(BigInt(e.reservedAmount ?? e.amount)),
      settled: atomicToUsd(BigInt(e.amount)),
      settledFrom: e.settledFrom ?? "estimate",
    },
    c,
  );
}

/**
 * A report refused for the entry `entryId` (./report-screen.ts): logged, and alerted once per entry fleet-wide with
 * what was reported and what the entry now stands at. Never throws.
 */
export async function alertRefusedReport(
  services: LedgerServices,
  entryId: string,
  refused: RefusedReport,
  c: Context | undefined,
): Promise<void> {
  try {
    const e = await services.stores.ledger.get(entryId);
    const tenant = e && services.directory.get(e.tenant);
    if (!e || !tenant) return;
    const won = await services.stores.kv.setIfAbsent(stateKeys.creditsReportRefused(e.id), services.instanceId, 7 * 24 * 3_600_000);
    if (!won) return;
    services.logger.info("upstream report refused", { entry: e.id, tenant: e.tenant, route: e.route, ...refused, amount: e.amount });
    await services.moneyEvents?.announce(
      tenant,
      {
        type: "credits.report_refused",
        window: "total",
        period: e.id,
        route: e.route,
        resource: e.resource ?? null,
        reason: refused.reason,
        field: refused.field,
        reported: refused.shown,
        settled: atomicToUsd(BigInt(e.amount)),
      },
      c,
    );
  } catch (err) {
    services.logger.error("refused report alert failed", { entry: entryId, error: String((err as Error)?.message ?? err) });
  }
}

/**
 * A committed credits entry's figure from the upstream landed (or changed): the entry (and a capped token's mirror)
 * is settled again to `cost` × the tenant's multiplier. Returns the difference charged.
 */
export async function correctSettlement(
  services: LedgerServices,
  e: LedgerEntry,
  cost: bigint,
  from: SettledFrom,
  c?: Context,
): Promise<bigint> {
  const charged = withMultiplier(cost, e.multiplier);
  const fields = { settledFrom: from, costAmount: cost.toString() };
  const now = services.now();
  const delta = await services.stores.ledger.resettle(e.id, charged, fields, now);
  const cap = await services.stores.ledger.get(capEntryId(e.id));
  if (cap?.state === "committed") await services.stores.ledger.resettle(cap.id, charged, fields, now);
  const before = BigInt(e.costAmount ?? e.amount);
  await afterCreditSettlement(services, c, { entryId: e.id, tenant: e.tenant, route: e.route, charged: delta, cost: cost - before });
  if (delta > 0n) services.background(c, checkBudget(services, e.tenant, c), "budget alert check");
  services.logger.info("credit settlement corrected", {
    entry: e.id,
    tenant: e.tenant,
    from,
    amount: charged.toString(),
    delta: delta.toString(),
  });
  return delta;
}
