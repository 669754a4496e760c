// The tenants' request logs as operators and tenants read them (the admin API, /_tollgate/requests and the console
// alike): a tenant's last requests, searched by status, route, error code, method, request id and time, as JSON or CSV.
// The log is bounded per tenant (config requestLog.keep), so a search reads the tenant's whole log and filters it here.
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import type { RequestRecord } from "../../state/types.js";
import { atomicToUsd } from "../../payments/index.js";

/** What a search may name; every field optional. Values as a query string carries them. */
export interface RequestSearch {
  /** "404", "4xx", "5xx", "error" (400 and above) or "ok" (below 400). */
  status?: string;
  /** A row name ("x402.web.search"), a family of rows ("sandbox": every "sandbox.…"), or a path prefix ("/api/"). */
  route?: string;
  /** The gateway's error code, e.g. "budget_exceeded". */
  code?: string;
  method?: string;
  /** One request id. */
  id?: string;
  /** ISO date or date-time; a bare date `to` includes that whole day (UTC). */
  from?: string;
  to?: string;
  /** 1–1000, default 100. */
  limit?: string;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** One malformed field of a search: every one is named in the one 400 (the Requests page shows them all). */
type Problem = { field: string; problem: string };

/** A search's test of one record, and its limit. @throws GatewayError 400 naming every field at fault. */
function requestFilter(q: RequestSearch): { test: (r: RequestRecord) => boolean; limit: number } {
  const tests: Array<(r: RequestRecord) => boolean> = [];
  const problems: Problem[] = [];
  const invalid = (field: string, problem: string) => void problems.push({ field, problem });
  const status = q.status?.trim().toLowerCase();
  if (status) {
    if (/^[1-5]\d\d$/.test(status)) tests.push((r) => r.status === Number(status));
    else if (/^[1-5]xx$/.test(status)) tests.push((r) => Math.floor(r.status / 100) === Number(status[0]));
    else if (status === "error") tests.push((r) => r.status >= 400);
    else if (status === "ok") tests.push((r) => r.status < 400);
    else invalid("status", 'expected a status ("404"), a class ("4xx"), "error" or "ok"');
  }
  const route = q.route?.trim();
  if (route) {
    if (route.length > 256) invalid("route", "at most 256 characters");
    else if (route.startsWith("/")) tests.push((r) => r.path.startsWith(route));
    else tests.push((r) => r.route === route || r.route.startsWith(`${route}.`));
  }
  const code = q.code?.trim();
  if (code) {
    if (!/^[a-z0-9_.-]{1,64}$/i.test(code)) invalid("code", 'expected an error code like "budget_exceeded"');
    else tests.push((r) => r.code === code);
  }
  const method = q.method?.trim().toUpperCase();
  if (method) {
    if (!/^[A-Z]{3,7}$/.test(method)) invalid("method", 'expected an HTTP method like "POST"');
    else tests.push((r) => r.method === method);
  }
  const id = q.id?.trim();
  if (id) tests.push((r) => r.id === id);
  const from = timeOf("from", q.from, false, invalid);
  const to = timeOf("to", q.to, true, invalid);
  if (from !== undefined) tests.push((r) => r.at >= from);
  if (to !== undefined) tests.push((r) => r.at < to);
  if (from !== undefined && to !== undefined && to <= from) invalid("to", "must be after from");
  let limit = DEFAULT_LIMIT;
  if (q.limit !== undefined && q.limit !== "") {
    limit = Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) invalid("limit", `expected a whole number from 1 to ${MAX_LIMIT}`);
  }
  if (problems.length)
    throw new GatewayError(400, "invalid_params", problems.map((p) => `${p.field}: ${p.problem}`).join("; "), {
      field: problems[0]!.field,
      fields: problems,
    });
  return { test: (r) => tests.every((t) => t(r)), limit };
}

/** Epoch ms of an ISO date or date-time; `to` given as a bare date is the end of that day (exclusive bound). */
function timeOf(field: string, s: string | undefined, end: boolean, invalid: (field: string, problem: string) => void): number | undefined {
  if (s === undefined || s.trim() === "") return undefined;
  const t = Date.parse(s.trim());
  if (Number.isNaN(t)) return void invalid(field, 'expected an ISO-8601 date like "2026-11-01" or "2026-11-01T12:00:00Z"');
  return end && BARE_DATE.test(s.trim()) ? t + DAY_MS : t;
}

/**
 * A record as the API shows it: its time as ISO, its spend in USD beside the atomic figure, its path redacted as the
 * access log's (records are redacted when written; a record kept from before, or a secret registered since, is too).
 */
function requestView(r: RequestRecord, redact: (text: string) => string) {
  return {
    id: r.id,
    time: new Date(r.at).toISOString(),
    tenant: r.tenant,
    method: r.method,
    route: r.route,
    path: redact(r.path),
    status: r.status,
    durationMs: r.durationMs,
    ...(r.upstreamMs !== undefined ? { upstreamMs: r.upstreamMs } : {}),
    ...(r.spend ? { spend: r.spend, spendUsd: atomicToUsd(BigInt(r.spend)) } : {}),
    ...(r.held ? { held: r.held, heldUsd: atomicToUsd(BigInt(r.held)) } : {}),
    ...(r.code ? { code: r.code } : {}),
    ...(r.traceId ? { traceId: r.traceId } : {}),
    ...(r.cache ? { cache: r.cache } : {}),
  };
}

export type RequestView = ReturnType<typeof requestView>;

/**
 * The requests of `tenants` matching the search, newest first, at most its limit. Records this instance still holds
 * are written first, so a read sees the instance's own requests at once.
 */
export async function searchRequests(services: GatewayServices, tenants: string[], q: RequestSearch): Promise<RequestView[]> {
  const { test, limit } = requestFilter(q);
  await services.requests?.flush().catch(() => {});
  const keep = services.config.requestLog.keep;
  if (keep <= 0) return [];
  const logs = await Promise.all(tenants.map((t) => services.stores.requests.list(t, keep)));
  const found = logs.flat().filter(test);
  if (tenants.length > 1) found.sort((a, b) => b.at - a.at);
  const redact = (text: string) => services.logger.redactor.text(text);
  return found.slice(0, limit).map((r) => requestView(r, redact));
}

/** One of the tenant's requests by id; another tenant's id (or one no longer kept) answers 404. */
export async function tenantRequest(services: GatewayServices, tenant: string, id: string): Promise<RequestView> {
  const [found] = await searchRequests(services, [tenant], { id, limit: "1" });
  if (!found || !id) throw new GatewayError(404, "not_found", `No request ${id} in the request log of this tenant.`);
  return found;
}

const CSV_COLUMNS = [
  "time",
  "tenant",
  "id",
  "method",
  "route",
  "path",
  "status",
  "durationMs",
  "upstreamMs",
  "spendUsd",
  "heldUsd",
  "code",
  "traceId",
  "cache",
] as const;

/** A CSV cell: quoted when it holds a separator, quote or line break; a leading =+-@ neutralised (spreadsheet formulas). */
function cell(v: unknown): string {
  if (v === undefined || v === null) return "";
  let s = String(v);
  if (/^[=+\-@\t\r]/.test(s) && typeof v === "string") s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** The requests as CSV, one header line then one line per request. */
export function requestsCsv(rows: RequestView[]): string {
  const lines = [CSV_COLUMNS.join(",")];
  for (const r of rows) lines.push(CSV_COLUMNS.map((k) => cell((r as Record<string, unknown>)[k])).join(","));
  return `${lines.join("\r\n")}\r\n`;
}
