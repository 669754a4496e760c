// Spend against budgets, for both kinds (x402 payments and credit-billed calls): reserve in the tenant's windows and a
// keyless token's cap at once, then settle, release or hold every entry the spend counts under.
import type { Context } from "hono";
import { limitsOf } from "./budgets/limits.js";
import { budgetExceeded, type BudgetServices, exhaustedWindow, stoppedRefusal } from "./budgets/exhaustion.js";
import { windowPeriod } from "./budgets/windows.js";
import { checkBudget } from "./budgets/thresholds.js";
import type { GatewayServices } from "../services.js";
import { GatewayError } from "../errors.js";
import { releaseOrRemember, remember } from "./abandoned.js";
import type { Tenant } from "../identity/tenants.js";
import { HELD } from "../state/holds.js";
import type { BudgetWindow, HoldGrowth, LedgerEntry, NewLedgerEntry, ReserveResult, SettlementFields } from "../state/types.js";
import { atomicToUsd } from "./money.js";
import type { PaymentsMemory } from "./memory.js";

/**
 * What the ledger touches: the ledger itself and the budget markers (stores), the clock, this instance's id, the log,
 * metrics, background work, and the money events port the budget events a settlement may raise are announced on.
 */
export type LedgerServices = BudgetServices & Pick<GatewayServices, "metrics" | "payments">;

/** A keyless token's own spend cap, checked with the tenant's budget. */
export interface SpendCap {
  id: string;
  amount: bigint;
  /** The window the cap counts in (an OAuth grant's choice); "total" when absent. */
  window?: "daily" | "monthly" | "total";
  /** The OAuth grant the cap belongs to: every entry of the spend names it. */
  grant?: string;
}

export interface SpendRequest {
  tenant: Tenant;
  cap?: SpendCap;
  /**
   * What to reserve. `id` defaults to a fresh UUID and `instance` to this gateway's; `tenant` comes from above.
   * Credits: `kind: "credits"`, `meter`, and for time-metered resources `resource` and `validBefore` (unix seconds when
   * the resource ends at the latest), with `amount` the most it can cost (timeout × rate).
   */
  entry: Omit<NewLedgerEntry, "id" | "tenant"> & { id?: string };
  /** The request the spend is for: work a refusal starts beside it (the exhaustion alert) is kept alive by it. */
  context?: Context;
}

/** A reservation: the tenant's entry, and every ledger id the spend counts under (a capped token's entry too). */
export interface SpendHold {
  entry: LedgerEntry;
  ids: string[];
}

/** A spend known by its ledger ids and tenant (a hold kept between the call that opened it and its end). */
export interface SpendRef {
  ids: string[];
  tenant: string;
}

type AnySpend = SpendHold | SpendRef | LedgerEntry;

/** The ledger id of a capped token's entry for a tenant entry. */
export const capEntryId = (id: string) => `${id}:cap`;
/** The ledger tenant a keyless token's cap is counted under. */
export const capLedgerTenant = (tokenId: string) => `token:${tokenId}`;

/**
 * What this instance remembers between calls (services.payments, ./memory.ts): tenants found stopped, and tokens
 * whose cap refused a call lately (their next calls reserve the cap first, so a client retrying on a spent cap writes
 * nothing to its tenant's ledger).
 */
type SpendMemory = Pick<PaymentsMemory, "stopped" | "capRefused">;

/**
 * The window a tenant was found stopped in, while it still applies: the same period of a window the tenant still
 * limits (the mark lives until the window resets, so within its period it is still there).
 */
function knownStopped(memory: SpendMemory, tenant: Tenant, now: number): BudgetWindow | undefined {
  const known = memory.stopped.get(tenant.id);
  if (!known) return undefined;
  return limitsOf(tenant)[known.window] !== undefined && windowPeriod(known.window, now) === known.period ? known.window : undefined;
}

/**
 * Reserves `entry.amount` in the token's cap (if any) and the tenant's budget windows, atomically each, or neither,
 * after checking that a tenant whose `onExhausted` is "stop" is not stopped. The three go at once (one state round
 * trip: a capped token's entry and the exhausted marks live apart from the tenant's ledger, on another Redis slot or
 * Durable Object); a part that refuses releases the others before the refusal is answered. Nothing is signed before
 * all three answered, so a hold released this way was never spent; for the one round trip it lived it counted in
 * the tenant's windows, so a concurrent call may be refused a little early, never late (as a hold reserved ahead).
 * @throws GatewayError 402 `token_cap_exceeded` or `budget_exceeded` (naming the window, its figures and reset), or
 *   503 `state_unavailable` when the ledger cannot be reached (fail closed: nothing may be spent).
 */
export async function reserveSpend(services: LedgerServices, req: SpendRequest): Promise<SpendHold> {
  const { tenant, cap } = req;
  const ledger = services.stores.ledger;
  const memory = services.payments;
  const now = services.now();
  const id = req.entry.id ?? crypto.randomUUID();
  const base = { instance: services.instanceId, ...req.entry, ...(cap?.grant ? { grant: cap.grant } : {}), id };
  const price = BigInt(base.amount);
  const stopping = tenant.onExhausted === "stop";
  const known = stopping ? knownStopped(memory, tenant, now) : undefined;
  if (known) throw stoppedRefusal(tenant, known, price, now);
  const capId = cap ? capEntryId(id) : undefined;
  const ids = capId ? [id, capId] : [id];
  const reserveCap = (c: SpendCap) =>
    settled(ledger.reserve({ ...base, id: capEntryId(id), tenant: capLedgerTenant(c.id) }, { [c.window ?? "total"]: c.amount }, now));
  // A token whose cap refused lately reserves it first: its likely refusal touches nothing of the tenant's.
  const capFirst = cap && memory.capRefused.has(cap.id) ? await reserveCap(cap) : undefined;
  const goOn = capFirst === undefined || (capFirst.ok && capFirst.value.ok);
  const [capPart, stopPart, tenantPart] = await Promise.all([
    capFirst ?? (cap ? reserveCap(cap) : undefined),
    stopping && goOn ? settled(exhaustedWindow(services, tenant, now)) : undefined,
    goOn ? settled(ledger.reserve({ ...base, tenant: tenant.id }, limitsOf(tenant), now)) : undefined,
  ]);
  const capR = capPart?.ok ? capPart.value : undefined;
  const stopped = stopPart?.ok ? stopPart.value : undefined;
  const tenantR = tenantPart?.ok ? tenantPart.value : undefined;
  // What did land is given back before a refusal or an outage is answered (nothing was signed for it).
  const landed = [...(tenantR?.ok ? [id] : []), ...(capId && capR?.ok ? [capId] : [])];
  const outage = [capPart, stopPart, tenantPart].find((p) => p !== undefined && !p.ok);
  if (outage && !outage.ok) {
    // A reservation whose answer was lost may have landed: released once the store is back.
    const lost = [...(tenantPart && !tenantPart.ok ? [id] : []), ...(capId && capPart && !capPart.ok ? [capId] : [])];
    remember(services, lost, "reservation's answer lost (state store unavailable)");
    await Promise.all(landed.map((l) => releaseOrRemember(services, l, "state store unavailable").catch(() => {})));
    throw failClosed(services, outage.error);
  }
  if ((!capR || capR.ok) && !stopped && tenantR?.ok) {
    if (cap) memory.capRefused.delete(cap.id);
    return { entry: tenantR.entry, ids };
  }
  const reason = capR && !capR.ok ? "token cap exceeded" : stopped ? "tenant stopped" : "tenant budget exceeded";
  await Promise.all(landed.map((l) => releaseOrRemember(services, l, reason).catch(() => {})));
  if (cap && capR && !capR.ok) {
    memory.capRefused.set(cap.id, true);
    throw new GatewayError(
      402,
      "token_cap_exceeded",
      `This token's spend cap of $${atomicToUsd(cap.amount)} would be exceeded ($${atomicToUsd(capR.spent)} spent, this call costs $${atomicToUsd(price)}).`,
      { limit: atomicToUsd(capR.limit), spent: atomicToUsd(capR.spent), price: atomicToUsd(price) },
    );
  }
  if (stopped) {
    memory.stopped.set(tenant.id, { window: stopped, period: windowPeriod(stopped, now) });
    throw stoppedRefusal(tenant, stopped, price, now);
  }
  if (cap) memory.capRefused.delete(cap.id);
  throw budgetExceeded(services, tenant, tenantR as Extract<ReserveResult, { ok: false }>, price, req.context);
}

/** A call's outcome as a value: what it answered, or what it threw. */
type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
const settled = <T>(p: Promise<T>): Promise<Settled<T>> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/** Fail closed: a ledger that cannot be reached means no reservation, so no spend. */
function failClosed(services: LedgerServices, err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  services.logger.error("ledger unavailable", { error: String(err) });
  return new GatewayError(503, "state_unavailable", "The gateway cannot reach its budget store, so it will not pay; try again shortly.");
}

/** A ledger refusal saying the entry is gone or already settled (not an outage). */
const SETTLED = /^ledger entry .* (not found|cannot be extended)$/;

/**
 * A running resource was given more time: its hold grows by `amount` and ends `seconds` later, in the tenant's
 * budget windows atomically (a capped token's entry grows with it, unchecked: extending takes a tenant key), so the
 * one hold settles once for the minutes used. Negative figures give an earlier growth back, never refused.
 * Returns the grown tenant entry, or undefined when the hold is no longer open (settled at stop or expiry).
 * @throws GatewayError 402 `budget_exceeded` (nothing grown), or 503 `state_unavailable`.
 */
export async function extendSpend(
  services: LedgerServices,
  spend: SpendRef,
  growth: HoldGrowth & { tenant: Tenant; context?: Context },
): Promise<LedgerEntry | undefined> {
  const { tenant, amount, seconds, context } = growth;
  const ledger = services.stores.ledger;
  const now = services.now();
  const [id, ...caps] = spend.ids;
  let entry: LedgerEntry;
  try {
    const r = await ledger.extend(id!, { amount, seconds }, amount > 0n ? limitsOf(tenant) : {}, now);
    if (!r.ok) throw budgetExceeded(services, tenant, r, amount, context);
    entry = r.entry;
  } catch (err) {
    if (err instanceof Error && SETTLED.test(err.message)) return undefined;
    throw failClosed(services, err);
  }
  for (const cap of caps) {
    await ledger.extend(cap, { amount, seconds }, {}, now).catch((err) => {
      services.logger.error("a capped token's hold did not grow with its tenant's", { entry: cap, error: String(err) });
    });
  }
  return entry;
}

/**
 * Every id a spend counts under. From a ledger entry alone (a time-metered hold found again by its resource, maybe
 * in another process) a capped token's entry is looked up by its id.
 */
async function idsOf(services: LedgerServices, spend: AnySpend): Promise<string[]> {
  if ("ids" in spend && Array.isArray(spend.ids)) return spend.ids;
  const id = (spend as LedgerEntry).id;
  const cap = await services.stores.ledger.get(capEntryId(id));
  return cap ? [id, cap.id] : [id];
}

interface Settlement {
  /** What the spend came to (a time-metered resource's minutes × rate, or results × price); default: what was reserved. */
  finalAmount?: bigint;
  /** The x402 payment's on-chain transaction. */
  transaction?: string;
  /** Credits: where the figure came from and what it was before the tenant's multiplier (LedgerEntry). */
  fields?: SettlementFields;
  /** The request that settles it: the budget alerts checked beside it are kept alive by it. */
  context?: Context;
}

/**
 * The spend happened: commits every entry, at `finalAmount` when given, which returns the rest of the reservation to
 * the budget (x402: never more than was reserved; credits: a larger figure is recorded whole). Then checks the
 * thresholds it crossed, beside the request.
 */
export async function settleSpend(services: LedgerServices, spend: AnySpend, settlement: Settlement = {}): Promise<void> {
  const { finalAmount, transaction, context, fields } = settlement;
  const now = services.now();
  for (const id of await idsOf(services, spend)) await services.stores.ledger.commit(id, transaction, now, finalAmount, fields);
  const tenant = "entry" in spend ? spend.entry.tenant : spend.tenant;
  if (!tenant.startsWith("token:")) services.background(context, checkBudget(services, tenant, context), "budget alert check");
}

/** Nothing was spent: every entry's amount goes back to the budget. */
export async function releaseSpend(services: LedgerServices, spend: AnySpend, reason: string): Promise<void> {
  // Every id is tried; one the store cannot take now is retried by the reconciler (src/payments/abandoned.ts).
  let failed: unknown;
  for (const id of await idsOf(services, spend)) {
    await releaseOrRemember(services, id, reason).catch((err) => {
      failed ??= err;
    });
  }
  if (failed) throw failed;
}

/** The outcome is unknown: every entry stays counted until its validBefore, then the reconciler decides. */
export async function holdSpend(services: LedgerServices, spend: SpendHold | LedgerEntry, reason: string): Promise<void> {
  const now = services.now();
  for (const id of await idsOf(services, spend)) await services.stores.ledger.markUncertain(id, reason, now);
}

/**
 * Names what a time-metered hold is for once the upstream answered the create call ("sandbox:<id>"), on the cap entry
 * too, and optionally moves its end time (unix seconds) to the resource's own.
 */
export async function attachSpend(
  services: LedgerServices,
  spend: AnySpend,
  fields: { resource?: string; validBefore?: number },
): Promise<void> {
  const now = services.now();
  for (const id of await idsOf(services, spend)) await services.stores.ledger.attach(id, fields, now);
}

/** A resource's credits hold still open (reserved or uncertain), newest first: what its stop or expiry settles. */
export async function openHoldOf(services: LedgerServices, tenant: string, resource: string): Promise<LedgerEntry | undefined> {
  const entries = await services.stores.ledger.list({ tenant, kind: "credits", resource });
  return entries.find((e) => HELD.has(e.state));
}

/** What `ms` of a time-metered resource costs at `ratePerMinute` atomic units, each started minute counted whole. */
export function meteredCost(ratePerMinute: bigint, ms: number): bigint {
  if (ms <= 0) return 0n;
  return ratePerMinute * BigInt(Math.ceil(ms / 60_000));
}
