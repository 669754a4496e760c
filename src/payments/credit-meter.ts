// The credit meter: a credit-billed call, billed here and nowhere else. Its price is reserved before it is sent (402
// budget_exceeded, or token_cap_exceeded, when the budget cannot cover it); per call it is committed when the upstream
// did the work and released when it did not or nothing was sent; per unit or minute the hold is kept until the job or
// resource ends (./kept-holds.ts, settled to the upstream's report); an extension grows the resource's own hold. Its one
// entry is billCredits (through ./index.ts): the chain's meter step (middleware/meter) hands it the charge it read from
// the request, and the paid search its per-call charge (`settles: "handler"`: a cached or coalesced answer sends
// nothing, so costs nothing).
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import { attachResource, chargeOf, type CreditHold, growHold, releaseCredits, reserveCredits, settleCredits } from "./credit-ledger.js";
import { dropKept, keep, type KeptHold, keepNew, kept, priceOf } from "./kept-holds.js";
import type { LedgerServices } from "./spend.js";
import type { Meter, PriceName } from "../routing/row.js";
import { type CallOptions, type EarlyMoney, type MoneySteps, type Paid, type PaidResult, runMoney } from "./money-call.js";

/** What the meter touches: the ledger (whose settlements may raise budget alerts), its kept holds (kv), the upstream. */
export type MeterServices = LedgerServices & Pick<GatewayServices, "upstream">;

/** What a request is charged, as its row's meter reads it from the request. */
export type Charge =
  /** One call at the row's price; `holdMs`: how long an unsettled reservation stays open (a crash mid-call). */
  | { per: "call"; meter: Extract<Meter, { per: "call" }>; holdMs: number }
  /** Up to `units` units (pages, steps…) of a job: held until the job ends. */
  | { per: "units"; price: PriceName; units: number }
  /** A resource (sandbox, session) for up to `minutes`: held until it stops. */
  | { per: "minutes"; price: PriceName; resource: "sandbox" | "session"; minutes: number }
  /** `minutes` more of the running resource `id`: its own hold grows (or, with none open, a charge of its own). */
  | { per: "extension"; price: PriceName; resource: "sandbox" | "session"; id: string; minutes: number };

/** One credit-billed request as its caller describes it. */
export interface CreditCall {
  services: MeterServices;
  c: Context<GatewayEnv>;
  /** The row's name: the ledger's `route`. */
  row: string;
  tenant: Tenant;
  cap: { id: string; amount: bigint } | undefined;
  charge: Charge;
  /** Forwards the request (the rest of the chain, or the upstream call) and answers the upstream's response. */
  send: () => Promise<Response>;
  /** The id of what the upstream created (a job, a sandbox), once it answered: what a kept hold is kept under. */
  created?: () => Promise<string | undefined>;
  /**
   * Hands work to go beside the creation's claim (src/routing/created.ts, besideClaim): a resource's hold is attached
   * and kept in the claim's round trip. Without it, both follow the answer's id, one after the other.
   */
  besideClaim?: (claiming: (at: { kind: string; id: string }) => void) => void;
  /** Per call: the commit is recorded behind the answer (the hold already counts the price in every window). */
  settleBehind?: boolean;
}

/** Job holds and resource holds are kept this long past their end (a settlement after a restart finds them). */
const KEPT_PAST_END_MS = 24 * 3600_000;

/**
 * The credit meter's one entry, run whole and answered once. `paid` is what was committed per call (0 when released,
 * or when credits are off: then nothing is held); a kept hold reports 0 (it settles when what it pays for ends). With
 * the fleet's coalescing claim (per call only: the credit-billed search), the reservation starts beside the claim and
 * is released when another instance's answer is used instead (`{ elsewhere }`).
 * @example const { response, paid } = await billCredits({ services, c, row, tenant, cap, charge, send })
 */
export function billCredits<T = never>(call: CreditCall & CallOptions<T>): Promise<Paid<T>> {
  const { services, c, charge } = call;
  const on = services.config.credits.enabled;
  const steps: MoneySteps = {
    early: on && charge.per === "call",
    start: () => {
      const credit = reserveCall(call);
      credit.catch(() => {});
      return { credit };
    },
    drop: (e: EarlyMoney, reason: string) => {
      const release = e.credit?.then((hold) => releaseCredits(services, hold, reason));
      if (release)
        services.background(
          c,
          release.catch(() => {}),
          "release a credit hold reserved ahead",
        );
    },
    run: async (e?: EarlyMoney): Promise<PaidResult> => {
      if (!on) return { response: await call.send(), paid: 0n };
      if (charge.per === "call") return billCall(call, e?.credit);
      if (charge.per === "extension") {
        const grown = await extendKeptHold(call, charge);
        if (grown) return grown;
      }
      return holdFor(call);
    },
  };
  return runMoney(services, { tenant: call.tenant, context: c }, steps, call);
}

/** Reserves a call's price (what `billCall` holds). */
function reserveCall(call: CreditCall): Promise<CreditHold> {
  const { services, c, charge } = call;
  if (charge.per !== "call") throw new Error("not a per-call charge");
  return reserveCredits(services, c, {
    tenant: call.tenant,
    cap: call.cap,
    route: call.row,
    amount: priceOf(services, charge.meter.price),
    meter: "call",
    validBefore: services.now() + charge.holdMs,
  });
}

/** Sends a per-call request with its price held (`held`: the reservation, already started). */
async function billCall(call: CreditCall, held?: Promise<CreditHold>): Promise<PaidResult> {
  const { services, c } = call;
  const hold = await (held ?? reserveCall(call));
  const amount = hold.amount;
  let response: Response;
  try {
    response = await call.send();
  } catch (err) {
    await releaseCredits(services, hold, `not forwarded: ${String((err as Error)?.message ?? err).slice(0, 120)}`);
    throw err;
  }
  if (!response.ok) {
    await releaseCredits(services, hold, `upstream answered ${response.status}`);
    return { response, paid: 0n };
  }
  if (call.settleBehind) services.background(c, settleCredits(services, c, hold), "commit a credit call");
  else await settleCredits(services, c, hold);
  // The request log shows what the ledger records (the price × the tenant's multiplier), not the price held.
  c.get("logFields").credits = chargeOf(hold);
  return { response, paid: amount };
}

/**
 * Units, minutes, or an extension with no open hold to grow: the most it can cost is reserved before it is sent; a
 * job or resource the upstream created keeps its hold until it ends, anything else settles the reservation whole.
 */
async function holdFor(call: CreditCall): Promise<PaidResult> {
  const { services, c, charge } = call;
  if (charge.per === "call") throw new Error("a per-call charge is billed, not held");
  const rate = priceOf(services, charge.price);
  const now = services.now();
  let amount: bigint;
  let validBefore: number;
  if (charge.per === "units") {
    amount = rate * BigInt(charge.units);
    validBefore = now + services.config.credits.jobHoldMinutes * 60_000;
  } else if (charge.per === "extension") {
    // No open hold to grow (credits were off at creation, or it was settled): the extension is its own charge.
    amount = rate * BigInt(charge.minutes);
    validBefore = now + charge.minutes * 60_000;
  } else {
    // The gateway names the timeout itself (the meter step wrote it in the body), so this is the resource's maximum.
    amount = rate * BigInt(Math.ceil(charge.minutes));
    validBefore = now + Math.ceil(charge.minutes + 5) * 60_000;
  }
  const hold = await reserveCredits(services, c, {
    tenant: call.tenant,
    cap: call.cap,
    route: call.row,
    amount,
    meter: charge.per,
    validBefore,
  });
  if (charge.per === "extension") await attachResource(services, hold, `${charge.resource}:${charge.id}`);
  const kind = charge.per === "minutes" ? charge.resource : "job";
  const keptHold: KeptHold = { ...hold, rate: rate.toString(), startedAt: now, meter: charge.per };
  const keptMs = validBefore - now + KEPT_PAST_END_MS;
  // Beside the claim (one round trip for the creation): the hold attached to the id and kept under it, unless a record
  // is there already (an id another tenant holds: its record is never replaced; the claim refuses it).
  let beside: { id: string; done: Promise<{ wrote: boolean } | { failed: unknown }> } | undefined;
  // The claim tells this call its moment through a promise (no call into payments/ from the claim's code): this call,
  // the one entry, still running, then does its writes.
  if (charge.per !== "extension" && call.besideClaim) {
    let claiming: (at: { kind: string; id: string }) => void = () => {};
    const claimed = new Promise<{ kind: string; id: string }>((resolve) => {
      claiming = resolve;
    });
    void claimed.then(({ kind: k, id }) => {
      if (k !== kind) return;
      const wrote = Promise.all([attachResource(services, hold, `${kind}:${id}`), keepNew(services, kind, id, keptHold, keptMs)]).then(
        ([, w]) => ({ wrote: w }),
        (failed: unknown) => ({ failed }),
      );
      // Never rejects: a failure is the meter's to raise, below, when this call awaits it (before the answer goes).
      beside = { id, done: wrote };
    });
    call.besideClaim(claiming);
  }
  /** What was written beside a claim whose creation is not handed over (or not answered): dropped before the release. */
  const undoBeside = async () => {
    const b = beside;
    const outcome = await b?.done;
    if (b && outcome && "wrote" in outcome && outcome.wrote) await dropKept(services, kind, b.id);
  };
  let res: Response;
  try {
    res = await call.send();
  } catch (err) {
    await undoBeside();
    await releaseCredits(services, hold, `not forwarded: ${String((err as Error)?.message ?? err).slice(0, 120)}`);
    throw err;
  }
  if (!res.ok) {
    await undoBeside();
    await releaseCredits(services, hold, `upstream answered ${res.status}`);
    return { response: res, paid: 0n };
  }
  const id = charge.per === "extension" ? undefined : await call.created?.();
  if (!id) {
    // Nothing to settle against later: the full reservation is the charge.
    await settleCredits(services, c, hold);
    // The request log shows what the ledger records: a charge settled now as spend, a hold kept open as held.
    c.get("logFields").credits = chargeOf(hold);
    return { response: res, paid: hold.amount };
  }
  c.get("logFields").held = chargeOf(hold);
  const besideOutcome = beside?.id === id ? await beside.done : undefined;
  if (besideOutcome && "failed" in besideOutcome) throw besideOutcome.failed;
  if (!besideOutcome) await attachResource(services, hold, `${kind}:${id}`);
  // Not written beside the claim (no claim asked for it, or a record was there: this tenant's id made again), now.
  if (!besideOutcome?.wrote) await keep(services, kind, id, keptHold, keptMs);
  return { response: res, paid: 0n };
}

/**
 * An extension of a running resource: its kept hold grows by the minutes at the hold's own rate before the upstream
 * sees the request (402 when the budget cannot take it), and gives them back when the upstream refuses. Undefined
 * when there is no open hold to grow.
 */
async function extendKeptHold(call: CreditCall, x: Extract<Charge, { per: "extension" }>): Promise<PaidResult | undefined> {
  const { services, c } = call;
  const hold = await kept(services, x.resource, x.id);
  if (!hold) return undefined;
  const amount = BigInt(hold.rate) * BigInt(x.minutes);
  const grown = await growHold(services, hold, { tenant: call.tenant, amount, minutes: x.minutes, context: c });
  if (!grown) return undefined;
  c.get("logFields").held = chargeOf({ ...hold, amount });
  // Best effort: a hold left grown still settles for the minutes used, only its expiry would come later.
  const giveBack = () =>
    growHold(services, hold, { tenant: call.tenant, amount: -amount, minutes: -x.minutes }).catch((err) =>
      services.logger.error("an extension the upstream refused was not given back", {
        resource: `${x.resource}:${x.id}`,
        error: String(err),
      }),
    );
  let res: Response;
  try {
    res = await call.send();
  } catch (err) {
    await giveBack();
    throw err;
  }
  if (!res.ok) {
    await giveBack();
    return { response: res, paid: 0n };
  }
  // The kept record must outlive the new end time; one settled meanwhile (a stop) is not brought back.
  const validBefore = (grown.validBefore ?? 0) * 1000;
  if (await kept(services, x.resource, x.id))
    await keep(services, x.resource, x.id, { ...hold, amount: BigInt(grown.amount) }, validBefore - services.now() + KEPT_PAST_END_MS);
  return { response: res, paid: 0n };
}
