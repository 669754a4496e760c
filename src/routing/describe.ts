// The route table as a reader sees it: one markdown line per row (`tollgate routes`, docs/routes.md).
import { referenceFields } from "./bodies/declare.js";
import { methodsOf, ROUTES, type Meter, type RouteRow } from "./table.js";

function meterText(m: Meter | undefined): string {
  if (!m) return "";
  if (m.per === "call") return m.settles === "handler" ? `${m.price} per upstream call (a cached answer is free)` : `${m.price} per call`;
  if (m.per === "units" && m.units === "extractPages")
    return `${m.price} × pages (1 per URL, maxLinks per URL ending in /*, maxLinks default ${m.default})`;
  if (m.per === "units") return `${m.price} × ${m.units} (default ${m.default})`;
  if (m.per === "minutes") return `${m.price} × timeoutMinutes, settled at stop`;
  return `${m.price} × durationMinutes, added to the ${m.resource}'s hold`;
}

function paid(row: RouteRow): string {
  if (row.refuse) return `refused: ${row.refuse.status} ${row.refuse.code}`;
  if (row.pay === "x402") return "x402 (the gateway pays)";
  if (row.pay === "credits") return `credits: ${meterText(row.meter)}`;
  return "free";
}

function owner(row: RouteRow): string {
  const parts: string[] = [];
  if (row.owns) parts.push(`owns ${row.owns.kind} :${row.owns.param}`);
  if (row.creates) parts.push(`creates ${row.creates}`);
  if (row.list) parts.push(`lists own ${row.list.kind}`);
  if (row.quota) parts.push(`quota ${row.quota.kind}${row.quota.until === "expiry" ? " (until its paid end)" : ""}`);
  if (row.rateLimited === false) parts.push("no rate limit");
  if (row.bodyLimit) parts.push(`body ≤ ${row.bodyLimit / 1024} KiB`);
  return parts.join(", ");
}

/** What a row's body may hold, and which of its fields name resources the caller must own. */
function bodyText(row: RouteRow): string {
  const b = row.body;
  if (b.kind === "none") return "—";
  if (b.kind === "sandbox") return "sandbox plane";
  if (b.kind === "bytes") return "bytes";
  if (b.kind === "handler") return b.what;
  if (b.kind === "multipart") return `multipart: ${b.fields.join(", ")}`;
  const refs = referenceFields(b.schema);
  return refs.length ? `JSON; owned: ${refs.map((r) => `\`${r.path}\` ${r.kind}`).join(", ")}` : "JSON";
}

/** The whole table as markdown, in mount order. */
export function routeTableMarkdown(rows: readonly RouteRow[] = ROUTES): string {
  const lines = [
    "| row | method | path | caller | scope | resource | body | paid | class |",
    "|---|---|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| \`${r.name}\` | ${methodsOf(r).join(", ")} | \`${r.path}\` | ${r.auth.join(", ")} | ${r.tokenScope && !r.auth.includes("key") ? `token: ${r.tokenScope}` : (r.scope ?? "—")} | ${owner(r)} | ${bodyText(r)} | ${paid(r)} | ${r.metric} |`,
    ),
  ];
  return `${lines.join("\n")}\n`;
}
