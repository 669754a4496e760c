// A job bought with `upto` and started (the upstream answered its id): its pending sale is written with what settles
// it later — the credit meter's ledger entry for the job (what it will have used, outbound), the most it can cost, and
// the status path the gateway follows it by (./job-sales.ts).
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import { JOB_ROWS, jobMinutes, requestMaxCost } from "./job-offer.js";
import type { JobSales } from "./job-sales.js";

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export async function openJobSale(
  jobs: JobSales,
  c: Context<GatewayEnv>,
  sale: {
    id: string;
    row: string;
    tenant: string;
    payer: string;
    payTo: string;
    payload: PaymentPayload;
    requirements: PaymentRequirements;
    paymentId?: string;
    /** When the start request began running (its credit entry is no older). */
    since: number;
  },
): Promise<void> {
  const services = jobs.services;
  const row = JOB_ROWS.get(sale.row)!;
  const sales = services.config.sales!;
  const asset = sales.accept.find((a) => a.network === sale.requirements.network && same(a.asset, sale.requirements.asset))!;
  const now = services.now();
  const { since, ...fields } = sale;
  return jobs.open({
    ...fields,
    statusPath: `${row.path}/${encodeURIComponent(sale.id)}/status`,
    origin: new URL(c.req.url).origin,
    startedAt: now,
    settleBy: now + jobMinutes(sales.prices.jobs?.minutes) * 60_000,
    maxCostMicroUsd: (await requestMaxCost(services, c, sale.row)).toString(),
    entry: await creditEntryOf(services, sale.tenant, sale.row, sale.id, since),
    decimals: asset.decimals,
    requestId: c.get("requestId"),
  });
}

/**
 * The ledger entry the credit meter billed the job under: a pages or steps job's hold is attached to `job:<id>`; a
 * per-call job (a scrape) was committed at its start, the newest entry of its row this request made — then attached to
 * `job:<id>` here, so the books show which job it paid for.
 */
async function creditEntryOf(
  services: GatewayServices,
  tenant: string,
  row: string,
  id: string,
  since: number,
): Promise<string | undefined> {
  const { ledger } = services.stores;
  const resource = `job:${id}`;
  const held = await ledger.list({ tenant, resource, limit: 1 });
  if (held[0]) return held[0].id;
  const recent = await ledger.list({ tenant, kind: "credits", limit: 20 });
  const e = recent.find((x) => x.route === row && !x.resource && x.createdAt >= since);
  if (!e) return undefined;
  await ledger.attach(e.id, { resource }, services.now()).catch(() => {});
  return e.id;
}
