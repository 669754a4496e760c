// What a credit-billed job costs a wallet at most: the row's reservation, as the credit meter holds it for any tenant
// (middleware/meter: the pages, URLs or steps the request asks for × their credit price; one price for a per-call
// job), so the buyer signs exactly what the gateway may spend upstream for it, × the markup. Read from the request's
// body before anything runs, the same way the meter step reads it after.
import type { Context } from "hono";
import type { TollgateConfig } from "../../config/schema.js";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import { usdToAtomic } from "../payments/index.js";
import { jsonBody } from "../routing/json-body.js";
import type { Meter, RouteRow } from "../routing/row.js";
import { ROUTES } from "../routing/table.js";
import type { GatewayServices } from "../services.js";

/** Units a request may ask for at most (the meter step refuses more with 400). */
const MAX_UNITS = 10_000;

/** The job rows a `jobs` price sells: every credit-billed start of a job or an agent task in the route table. */
export const JOB_ROWS: ReadonlyMap<string, RouteRow & { meter: Meter }> = new Map(
  ROUTES.filter(
    (r): r is RouteRow & { meter: Meter } =>
      (r.handler === "job.start" || r.handler === "task.start") &&
      r.pay === "credits" &&
      (r.meter?.per === "units" || r.meter?.per === "call"),
  ).map((r) => [r.name, r]),
);

/** The units a job request asks for at most (pages, URLs, steps), as the meter step counts them; 1 for a per-call job. */
export function jobUnits(meter: Meter, body: Record<string, unknown>): number {
  if (meter.per !== "units") return 1;
  let n: number;
  if (meter.units === "extractPages") {
    const urls = Array.isArray(body.urls) ? body.urls : [];
    const wild = urls.filter((u) => typeof u === "string" && u.endsWith("/*")).length;
    const maxLinks = typeof body.maxLinks === "number" ? body.maxLinks : meter.default;
    n = urls.length - wild + wild * maxLinks;
  } else {
    let holder: unknown = body;
    for (const k of meter.units.split("."))
      holder = holder && typeof holder === "object" ? (holder as Record<string, unknown>)[k] : undefined;
    n = Array.isArray(holder) ? holder.length : typeof holder === "number" && Number.isFinite(holder) ? Math.ceil(holder) : meter.default;
  }
  if (n > MAX_UNITS)
    throw new GatewayError(400, "invalid_params", `${meter.units} may ask for at most ${MAX_UNITS}.`, {
      field: meter.units === "extractPages" ? "maxLinks" : meter.units,
      limit: MAX_UNITS,
    });
  return Math.max(1, n);
}

/** The most `row`'s job for `body` costs upstream, micro-USD: units × the credit price (the meter's reservation). */
export function jobMaxCost(config: TollgateConfig, row: RouteRow & { meter: Meter }, body: Record<string, unknown>): bigint {
  return usdToAtomic(config.credits.prices[row.meter.price]) * BigInt(jobUnits(row.meter, body));
}

/** The same for the request in `c` (its JSON body read once, shared with the chain); an empty body asks the defaults. */
export async function requestMaxCost(services: GatewayServices, c: Context<GatewayEnv>, rowName: string): Promise<bigint> {
  const row = JOB_ROWS.get(rowName);
  if (!row) throw new Error(`${rowName} is not a job row`);
  const body = c.req.method === "POST" ? (await jsonBody(c, services.platform)).json : {};
  return jobMaxCost(services.config, row, body);
}

/** How long a job is followed before it is settled anyway (`sales.prices.jobs.minutes`, default an hour). */
export const jobMinutes = (minutes: number | undefined) => minutes ?? 60;
