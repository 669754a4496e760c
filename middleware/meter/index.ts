// Credits metered into the tenants' budgets: a credit-billed row reserves its price before it is forwarded, and the
// reservation is committed or released from the answer (per call), when the job ends (per unit) or when the resource
// stops (per minute; an extension grows the resource's own hold). The same ledger and windows as x402 payments, so one
// budget covers both kinds of spend. This step only reads what the request asks for; the money is the credit meter's
// (src/payments/credit-meter.ts), entered once through src/payments/index.ts.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import { billCredits, type Charge, type MeterServices as CreditMeterServices } from "../../src/payments/index.js";
import { callerCap, callerTenant } from "../../src/identity/caller.js";
import { jsonBody, setJsonBody } from "../../src/routing/json-body.js";
import type { Meter, RouteRow } from "../../src/routing/table.js";
import { besideClaim, createdBy } from "../../src/routing/created.js";

/**
 * What the meter touches: what the credit meter does (the ledger, its kept holds, the upstream's reports), and the
 * request's JSON body (platform).
 */
type MeterServices = CreditMeterServices & Pick<GatewayServices, "platform">;

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
 * tenant's budget cannot cover it. Rows whose meter `settles` in the handler (cached search) get no step. The step
 * reads what the request asks for (units, minutes: written into the body when the client named none) and hands the
 * charge to the credit meter (src/payments/credit-meter.ts, through src/payments/index.ts), which bills it.
 * @example app.on("POST", "/api/scrape", identify(...), meterCredits(services, row), handler)
 */
export function meterCredits(services: MeterServices, row: RouteRow): MiddlewareHandler<GatewayEnv> | undefined {
  const meter = row.meter;
  if (!meter || (meter.per === "call" && meter.settles === "handler")) return undefined;
  return async function meterCreditsMiddleware(c, next) {
    if (!services.config.credits.enabled) return next();
    await billCredits({
      services,
      c,
      row: row.name,
      tenant: callerTenant(c),
      cap: callerCap(c),
      charge: await chargeOf(services, c, row, meter),
      send: async () => {
        await next();
        return c.res;
      },
      created: async () => (await createdBy(c)).id,
      besideClaim: (work) => besideClaim(c, work),
    });
  };
}

/** What the request asks the row's meter for. @throws GatewayError 400 for a count or duration out of bounds. */
async function chargeOf(
  services: MeterServices,
  c: Parameters<MiddlewareHandler<GatewayEnv>>[0],
  row: RouteRow,
  meter: Meter,
): Promise<Charge> {
  if (meter.per === "call") return { per: "call", meter, holdMs: services.config.credits.jobHoldMinutes * 60_000 };
  const body = (await jsonBody(c, services.platform)).json;
  if (meter.per === "units") return { per: "units", price: meter.price, units: unitsOf(c, meter, body) };
  if (meter.per === "extension") {
    const minutes = Number(body.durationMinutes);
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > 24 * 60)
      throw new GatewayError(400, "invalid_params", "durationMinutes must be an integer from 1 to 1440.", { field: "durationMinutes" });
    return { per: "extension", price: meter.price, resource: meter.resource, id: c.req.param(row.owns?.param ?? "id")!, minutes };
  }
  // The gateway names the timeout itself, so the reservation is the resource's true maximum.
  const asked = body.timeoutMinutes;
  const minutes = typeof asked === "number" && Number.isFinite(asked) && asked > 0 ? asked : services.config.credits.defaultTimeoutMinutes;
  if (minutes !== asked) setJsonBody(c, { ...body, timeoutMinutes: minutes });
  return { per: "minutes", price: meter.price, resource: meter.resource, minutes };
}
