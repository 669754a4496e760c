// `tollgate usage export` and `tollgate credits calibrate`: chargeback and price calibration from a running gateway.
import { parseArgs } from "node:util";
import { AdminCliError, api, common, target } from "./admin.js";
import type { Calibration } from "../payments/index.js";

const windowQuery = (v: { from?: string; to?: string }) => {
  const q = new URLSearchParams();
  for (const name of ["from", "to"] as const) {
    const s = v[name];
    if (s === undefined) continue;
    if (Number.isNaN(Date.parse(s))) throw new AdminCliError(`--${name}: expected an ISO-8601 date like "2026-11-01"`);
    q.set(name, s);
  }
  return q;
};

/**
 * `tollgate usage export [--from ISO] [--to ISO] [--format csv|json]`: the ledger by tenant, day, kind and route. A bare
 * date `--to` includes that day: `--from 2026-11-24 --to 2026-11-24` is that one day.
 */
export async function cmdUsage(sub: string | undefined, args: string[]): Promise<void> {
  if (sub !== "export")
    throw new AdminCliError(
      "tollgate usage export [--from DATE] [--to DATE (that day included)] [--format csv|json] --gateway URL --admin-key KEY",
    );
  const { values } = parseArgs({
    args,
    options: { ...common, from: { type: "string" }, to: { type: "string" }, format: { type: "string" } },
  });
  const format = values.format ?? "csv";
  if (format !== "csv" && format !== "json") throw new AdminCliError(`--format: expected csv or json, got "${format}"`);
  const t = target(values);
  const q = windowQuery(values);
  q.set("format", format);
  if (format === "json") {
    process.stdout.write(`${JSON.stringify(await api(t, "GET", `/usage/export?${q}`), null, 2)}\n`);
    return;
  }
  let res: Response;
  try {
    res = await fetch(`${t.gateway}/_tollgate/admin/usage/export?${q}`, { headers: { "x-api-key": t.key } });
  } catch (err) {
    throw new AdminCliError(`cannot reach ${t.gateway}: ${(err as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) throw new AdminCliError(`GET /usage/export: ${res.status}: ${text.slice(0, 300)}`);
  process.stdout.write(text);
}

/** `tollgate credits calibrate [--from ISO] [--to ISO]`: a price table that would have matched what the upstream reported. */
export async function cmdCredits(sub: string | undefined, args: string[]): Promise<void> {
  if (sub !== "calibrate")
    throw new AdminCliError("tollgate credits calibrate [--from ISO] [--to ISO] [--json] --gateway URL --admin-key KEY");
  const { values } = parseArgs({ args, options: { ...common, from: { type: "string" }, to: { type: "string" } } });
  const t = target(values);
  const r = await api<Calibration>(t, "GET", `/credits/calibrate?${windowQuery(values)}`);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
    return;
  }
  if (!r.rows.length) {
    process.stdout.write("No credit spend settled from the upstream's report in this window: nothing to calibrate against.\n");
    return;
  }
  process.stdout.write("route\tprice\tentries\treported\testimated\tratio\tcurrent\tproposed\n");
  for (const x of r.rows)
    process.stdout.write(
      `${x.route}\t${x.price}\t${x.entries}\t$${x.reportedUsd}\t$${x.estimatedUsd}\t${x.ratio}\t$${x.currentUsd}\t$${x.proposedUsd}\n`,
    );
  process.stdout.write("\n# proposed, for the config file:\n[credits.prices]\n");
  for (const [name, usd] of Object.entries(r.prices)) process.stdout.write(`${name} = "${usd}"\n`);
}
