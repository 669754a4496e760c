// Upstream lists cut down to what one tenant owns, with totalCount and paging computed over the tenant's items only.
// A page costs what the tenant asks for, not what the account holds: the ownership registry keeps each tenant's ids
// (newest first) with the last status the gateway saw, so the page, its totalCount and a status filter come from
// there, and only the page's items are read from the upstream (one detail read each). Filters the registry cannot
// answer (a text search other than a profile's name, time ranges) walk the upstream's pages as before.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { ResourceKind } from "../state/types.js";
import type { Tenant } from "../identity/tenants.js";
import { Upstream, upstreamJson } from "../upstream/upstream.js";
import { requestUrl } from "../web/request-url.js";
import { listItems, readWire, WireRecord } from "../upstream/records.js";

const SCAN_PAGE = 100;
const MAX_SCAN_PAGES = 200;

export interface OwnedListSpec {
  /** Upstream path, e.g. `/api/sandboxes`. */
  path: string;
  /** Array field of the response, e.g. `sandboxes`. */
  field: string;
  kind: ResourceKind;
  /** The upstream's page size when the client names none (20; sessions 10). */
  defaultLimit?: number;
}

export type OwnedPage = { items: WireRecord[]; totalCount: number; page: number; perPage: number } | { passthrough: Response };

/** How the upstream answers for one resource of a kind the list pages, and which filters can be answered locally. */
interface DetailSpec {
  path: (id: string) => string;
  /** The field the detail answer wraps the resource in, if any. */
  wrapper?: string;
  /** The kind has a `status` field the upstream's `status` filter matches exactly (one or more values). */
  status: boolean;
  /** Statuses that mean the resource has ended (its owner is then kept for the retention window only). */
  ended?: string[];
  /** A text filter the gateway applies to each detail as the upstream does to its list (query name, match). */
  text?: { param: string; matches: (item: WireRecord, needle: string) => boolean };
}

const DETAILS: Partial<Record<ResourceKind, DetailSpec>> = {
  profile: {
    path: (id) => `/api/profile/${encodeURIComponent(id)}`,
    status: false,
    // The upstream's `name`: a case-insensitive substring of the profile's name.
    text: {
      param: "name",
      matches: (p, needle) =>
        String(p.name ?? "")
          .toLowerCase()
          .includes(needle.toLowerCase()),
    },
  },
  volume: { path: (id) => `/api/volume/${encodeURIComponent(id)}`, status: false },
  sandbox: { path: (id) => `/api/sandbox/${encodeURIComponent(id)}`, status: true, ended: ["closed", "close-error", "error"] },
  session: { path: (id) => `/api/session/${encodeURIComponent(id)}`, status: true, ended: ["closed", "close-error", "error"] },
  snapshot: { path: (id) => `/api/snapshots/${encodeURIComponent(id)}`, wrapper: "snapshot", status: true },
};

/** The client's page and limit, clamped like the upstream (page ≥ 1, 1 ≤ limit ≤ 100, default 20). */
function requestedPage(query: URLSearchParams, fallback = 20): { page: number; perPage: number } {
  const page = Math.max(1, Number.parseInt(query.get("page") ?? "1", 10) || 1);
  const perPage = Math.min(100, Math.max(1, Number.parseInt(query.get("limit") ?? String(fallback), 10) || fallback));
  return { page, perPage };
}

/**
 * Walks the upstream's pages with the client's filters (the upstream's own filter semantics apply), keeps the tenant's
 * items, then pages those. Costs one upstream call per 100 upstream items; fine for the fleets a gateway fronts.
 */
export async function ownedPage(
  c: Context<GatewayEnv>,
  services: GatewayServices,
  tenant: Tenant,
  spec: OwnedListSpec,
): Promise<OwnedPage> {
  const query = requestUrl(c).searchParams;
  const { page, perPage } = requestedPage(query, spec.defaultLimit);
  const detail = DETAILS[spec.kind];
  if (detail && answersLocally(detail, query)) return recordPage(c, services, tenant, spec.kind, detail, query, page, perPage);
  const owned = new Set(await services.stores.ownership.list(spec.kind, tenant.id));
  const mine: WireRecord[] = [];
  // With several upstream accounts, each lists its own: the tenant's items of all of them are merged.
  const accounts = services.upstream.accounts;
  const from = accounts?.configured ? accounts.list.map((a) => a.id) : [undefined];
  for (const account of owned.size > 0 ? from : []) {
    const filters = new URLSearchParams(query);
    filters.delete("page");
    filters.delete("limit");
    filters.set("limit", String(SCAN_PAGE));
    let seen = 0;
    for (let p = 1; p <= MAX_SCAN_PAGES; p++) {
      filters.set("page", String(p));
      const res = await services.upstream.call(c, { method: "GET", path: `${spec.path}?${filters}`, account });
      if (!res.ok) return { passthrough: Upstream.relay(res) };
      const body = await upstreamJson(res, WireRecord);
      const items = listItems(WireRecord, body, spec.field);
      for (const item of items) if (owned.has(String(item.id))) mine.push(item);
      seen += items.length;
      const total = typeof body.totalCount === "number" ? body.totalCount : undefined;
      if (items.length === 0 || (total !== undefined ? seen >= total : items.length < SCAN_PAGE)) break;
      if (p === MAX_SCAN_PAGES)
        throw new GatewayError(
          503,
          "list_too_large",
          `The upstream list is larger than ${MAX_SCAN_PAGES * SCAN_PAGE} items; narrow it with filters.`,
        );
    }
  }
  return { items: mine.slice((page - 1) * perPage, page * perPage), totalCount: mine.length, page, perPage };
}

/** Whether every filter of the query is one the registry (and detail reads) can answer. */
function answersLocally(d: DetailSpec, query: URLSearchParams): boolean {
  for (const key of new Set(query.keys())) {
    if (key === "page" || key === "limit") continue;
    if (key === "status" && d.status) continue;
    if (key === d.text?.param && query.getAll(key).length === 1) continue;
    return false;
  }
  return true;
}

/** One detail read: the item, "gone" when the upstream no longer has it, or the upstream's failure to relay. */
async function readDetail(
  c: Context<GatewayEnv>,
  services: GatewayServices,
  d: DetailSpec,
  id: string,
): Promise<{ item: WireRecord } | { gone: true } | { passthrough: Response }> {
  const res = await services.upstream.call(c, { method: "GET", path: d.path(id) });
  if (res.status === 404) {
    await res.body?.cancel();
    return { gone: true };
  }
  if (!res.ok) return { passthrough: Upstream.relay(res) };
  const body = await upstreamJson(res, WireRecord);
  return { item: d.wrapper ? readWire(WireRecord, body[d.wrapper]) : body };
}

/**
 * A page from the tenant's own records. Without filters the candidates are the tenant's ids, newest first, and only
 * the page's items are read: at most page-size upstream calls. A status filter keeps ended resources by the status
 * they ended with and reads the live ones (their status may have changed upstream), so it costs the tenant's live
 * resources plus the page; a text filter reads each of the tenant's resources. An item found gone or no longer
 * matching is noted, dropped from the count, and the page refilled from the next candidate.
 */
async function recordPage(
  c: Context<GatewayEnv>,
  services: GatewayServices,
  tenant: Tenant,
  kind: ResourceKind,
  d: DetailSpec,
  query: URLSearchParams,
  page: number,
  perPage: number,
): Promise<OwnedPage> {
  const { ownership } = services.stores;
  const statuses = d.status ? query.getAll("status") : [];
  const needle = d.text ? query.get(d.text.param) : null;
  const read = new Map<string, WireRecord>();
  const fits = (item: WireRecord) =>
    (statuses.length === 0 || statuses.includes(String(item.status))) && (needle === null || d.text!.matches(item, needle));
  /** Reads one record; undefined when it is gone or does not fit (both noted). */
  const learn = async (id: string): Promise<WireRecord | undefined | Response> => {
    const got = await readDetail(c, services, d, id);
    if ("passthrough" in got) return got.passthrough;
    if ("gone" in got) {
      await ownership.setActive(kind, id, false);
      await ownership.noteStatus(kind, id, "gone");
      return undefined;
    }
    read.set(id, got.item);
    if (typeof got.item.status === "string") {
      if (d.ended?.includes(got.item.status)) await ownership.setActive(kind, id, false);
      await ownership.noteStatus(kind, id, got.item.status);
    }
    return fits(got.item) ? got.item : undefined;
  };

  const candidates: string[] = [];
  for (const r of await ownership.records(kind, tenant.id)) {
    if (r.status === "gone") continue;
    // A status can change upstream while the resource lives (a timeout ends it): under a status filter, live
    // resources and those never seen are read; ended ones keep the status they ended with.
    if (needle !== null || (statuses.length > 0 && (r.status === undefined || r.active))) {
      const item = await learn(r.id);
      if (item instanceof Response) return { passthrough: item };
      if (item) candidates.push(r.id);
    } else if (statuses.length === 0 || statuses.includes(r.status!)) candidates.push(r.id);
  }
  let total = candidates.length;
  const items: WireRecord[] = [];
  let next = (page - 1) * perPage;
  while (items.length < perPage && next < candidates.length) {
    const id = candidates[next++]!;
    const known = read.get(id);
    const item = known ?? (await learn(id));
    if (item instanceof Response) return { passthrough: item };
    if (item) items.push(item);
    else total--; // stale: it no longer fits, so it is no longer counted
  }
  return { items, totalCount: total, page, perPage };
}
