// Credits metered into the tenants' budgets: a credit-billed row reserves its price before it is forwarded, and the
// reservation is committed or released from the answer (per call), when the job ends (per unit) or when the resource
// stops (per minute; an extension grows the resource's own hold). The same ledger and windows as x402 payments, so one
// budget covers both kinds of spend.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import type { Tenant } from "../../src/identity/tenants.js";
import { attachResource, chargeOf, growHold, releaseCredits, reserveCredits, settleCredits } from "../../src/payments/credit-ledger.js";
import { callerCap, callerTenant } from "../../src/identity/caller.js";
import { jsonBody, setJsonBody } from "../../src/routing/json-body.js";
import type { Meter, RouteRow } from "../../src/routing/table.js";
import { createdBy } from "../../src/routing/created.js";
import { keep, kept, priceOf } from "../../src/payments/kept-holds.js";
import type { LedgerServices } from "../../src/payments/spend.js";
import { billCall } from "../../src/payments/credit-call.js";

/**
 * What the meter touches: credit prices and hold times (config), the clock, its kept holds (kv), the ledger (whose
 * settlements may raise budget alerts), and the upstream (the usage a resource or job reports when it settles).
 */
type MeterServices = LedgerServices & Pick<GatewayServices, "upstream" | "platform">;

/** Units a request may ask for at most; above it the request is refused rather than reserved. */
const MAX_UNITS = 10_000;

/**
 * Pages an extract may scrape: one per URL, and up to `maxLinks` for each URL ending in `/*` (the site below it is
 * crawled); with such a URL and no `maxLinks`, the default is written into the body, so the reservation covers all.
 */
function extractPages(c: Parameters<MiddlewareHandler<GatewayEnv>>[0], body: Record<string, unknown>, fallback: number): number {
  const urls = Array.isArray(body.urls) ? body.urls : [];
  const wild = urls.filter((u) => typeof u === "string" && u.endsWith("/*")).length;
  let maxLinks = typeof body.maxLinks === "number" ? body.maxLinks : undefined;
  if (wild && maxLinks === undefined) {
    maxLinks = fallback;
    setJsonBody(c, { ...body, maxLinks });
  }
  return urls.length - wild + wild * (maxLinks ?? 0);
}

/** The count a units-metered request asks for at most; a missing limit is written into the body at the default. */
function unitsOf(
  c: Parameters<MiddlewareHandler<GatewayEnv>>[0],
  meter: Extract<Meter, { per: "units" }>,
  body: Record<string, unknown>,
): number {
  if (meter.units === "extractPages") return bounded(extractPages(c, body, meter.default), meter.units);
  const path = meter.units.split(".");
  let holder: Record<string, unknown> = body;
  for (const k of path.slice(0, -1)) {
    const next = holder[k];
    holder = next && typeof next === "object" && !Array.isArray(next) ? (next as Record<string, unknown>) : {};
  }
  const v = holder[path.at(-1)!];
  let n: number;
  if (Array.isArray(v)) n = v.length;
  else if (typeof v === "number" && Number.isFinite(v)) n = Math.ceil(v);
  else {
    n = meter.default;
    if (meter.units !== "urls") setJsonBody(c, withPath(body, path, n));
  }
  return bounded(n, meter.units);
}

function bounded(n: number, units: string): number {
  if (n < 1) return 1;
  if (n > MAX_UNITS)
    throw new GatewayError(400, "invalid_params", `${units} may ask for at most ${MAX_UNITS}.`, {
      field: units === "extractPages" ? "maxLinks" : units,
      limit: MAX_UNITS,
    });
  return n;
}

/** A copy of `body` with `value` at `path` (objects along the way created or copied). */
function withPath(body: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  if (!rest.length) return { ...body, [head!]: value };
  const inner = body[head!];
  return {
    ...body,
    [head!]: withPath(inner && typeof inner === "object" && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {}, rest, value),
  };
}

/**
 * Reserves a credit-billed row's price before it is forwarded; 402 budget_exceeded (or token_cap_exceeded) when the
 * tenant's budget cannot cover it. Rows whose meter `settles` in the handler (cached search) get no step.
 * @example app.on("POST", "/api/scrape", identify(...), meterCredits(services, row), handler)
 */
export function meterCredits(services: MeterServices, row: RouteRow): MiddlewareHandler<GatewayEnv> | undefined {
  const meter = row.meter;
  if (!meter || (meter.per === "call" && meter.settles === "handler")) return undefined;
  return async function meterCreditsMiddleware(c, next) {
    if (!services.config.credits.enabled) return next();
    const tenant = callerTenant(c);
    if (meter.per === "call") {
      // Billed where every per-call row is (src/payments/credit-call.ts), around the rest of the chain.
      const call = { row: { name: row.name, meter }, tenant, cap: callerCap(c), holdMs: services.config.credits.jobHoldMinutes * 60_000 };
      await billCall(services, c, call, async () => {
        await next();
        return c.res;
      });
      return;
    }
    const rate = priceOf(services, meter.price);
    const now = services.now();
    let amount: bigint;
    let validBefore: number;
    if (meter.per === "units") {
      amount = rate * BigInt(unitsOf(c, meter, (await jsonBody(c, services.platform)).json));
      validBefore = now + services.config.credits.jobHoldMinutes * 60_000;
    } else if (meter.per === "extension") {
      const minutes = Number((await jsonBody(c, services.platform)).json.durationMinutes);
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > 24 * 60)
        throw new GatewayError(400, "invalid_params", "durationMinutes must be an integer from 1 to 1440.", { field: "durationMinutes" });
      const id = c.req.param(row.owns?.param ?? "id")!;
      if (await extendKeptHold(services, c, next, { kind: meter.resource, id, tenant, minutes })) return;
      // No open hold to grow (credits were off at creation, or it was settled): the extension is its own charge.
      amount = rate * BigInt(minutes);
      validBefore = now + minutes * 60_000;
    } else {
      // The gateway names the timeout itself, so the reservation is the resource's true maximum.
      const body = (await jsonBody(c, services.platform)).json;
      const asked = body.timeoutMinutes;
      const minutes =
        typeof asked === "number" && Number.isFinite(asked) && asked > 0 ? asked : services.config.credits.defaultTimeoutMinutes;
      if (minutes !== asked) setJsonBody(c, { ...body, timeoutMinutes: minutes });
      amount = rate * BigInt(Math.ceil(minutes));
      validBefore = now + Math.ceil(minutes + 5) * 60_000;
    }
    const hold = await reserveCredits(services, c, { tenant, cap: callerCap(c), route: row.name, amount, meter: meter.per, validBefore });
    if (meter.per === "extension") await attachResource(services, hold, `${meter.resource}:${c.req.param(row.owns?.param ?? "id")}`);
    try {
      await next();
    } catch (err) {
      await releaseCredits(services, hold, `not forwarded: ${String((err as Error)?.message ?? err).slice(0, 120)}`);
      throw err;
    }
    const res = c.res;
    if (!res.ok) {
      await releaseCredits(services, hold, `upstream answered ${res.status}`);
      return;
    }
    // The request log shows what the ledger records: a charge settled now as spend, a hold kept open as held.
    if (meter.per === "extension") {
      await settleCredits(services, c, hold);
      c.get("logFields").credits = chargeOf(hold);
      return;
    }
    const { id } = await createdBy(c);
    if (!id) {
      // Nothing to settle against later: the full reservation is the charge.
      await settleCredits(services, c, hold);
      c.get("logFields").credits = chargeOf(hold);
      return;
    }
    c.get("logFields").held = chargeOf(hold);
    const kind = meter.per === "minutes" ? meter.resource : "job";
    await attachResource(services, hold, `${kind}:${id}`);
    await keep(services, kind, id, { ...hold, rate: rate.toString(), startedAt: now, meter: meter.per }, validBefore - now + 24 * 3600_000);
  };
}

/**
 * An extension of a running resource: its kept hold grows by the minutes at the hold's own rate before the upstream
 * sees the request (402 when the budget cannot take it), and gives them back when the upstream refuses. False when
 * there is no open hold to grow.
 */
async function extendKeptHold(
  services: MeterServices,
  c: Parameters<MiddlewareHandler<GatewayEnv>>[0],
  next: () => Promise<void>,
  x: { kind: "sandbox" | "session"; id: string; tenant: Tenant; minutes: number },
): Promise<boolean> {
  const hold = await kept(services, x.kind, x.id);
  if (!hold) return false;
  const amount = BigInt(hold.rate) * BigInt(x.minutes);
  const grown = await growHold(services, hold, { tenant: x.tenant, amount, minutes: x.minutes, context: c });
  if (!grown) return false;
  c.get("logFields").held = chargeOf({ ...hold, amount });
  // Best effort: a hold left grown still settles for the minutes used, only its expiry would come later.
  const giveBack = () =>
    growHold(services, hold, { tenant: x.tenant, amount: -amount, minutes: -x.minutes }).catch((err) =>
      services.logger.error("an extension the upstream refused was not given back", { resource: `${x.kind}:${x.id}`, error: String(err) }),
    );
  try {
    await next();
  } catch (err) {
    await giveBack();
    throw err;
  }
  if (!c.res.ok) {
    await giveBack();
    return true;
  }
  // The kept record must outlive the new end time; one settled meanwhile (a stop) is not brought back.
  const validBefore = (grown.validBefore ?? 0) * 1000;
  if (await kept(services, x.kind, x.id))
    await keep(services, x.kind, x.id, { ...hold, amount: BigInt(grown.amount) }, validBefore - services.now() + 24 * 3600_000);
  return true;
}
