// Upstream lists cut down to what one tenant owns, with totalCount and paging computed over the tenant's items only.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { ResourceKind } from "../state/types.js";
import type { Tenant } from "../tenants.js";
import { Upstream, upstreamJson } from "../upstream.js";
import { requestUrl } from "../request-url.js";
import { listItems, WireRecord } from "../wire/read.js";

const SCAN_PAGE = 100;
const MAX_SCAN_PAGES = 200;

export interface OwnedListSpec {
  /** Upstream path, e.g. `/api/sandboxes`. */
  path: string;
  /** Array field of the response, e.g. `sandboxes`. */
  field: string;
  kind: ResourceKind;
}

export type OwnedPage = { items: WireRecord[]; totalCount: number; page: number; perPage: number } | { passthrough: Response };

/** The client's page and limit, clamped like the upstream (page ≥ 1, 1 ≤ limit ≤ 100, default 20). */
function requestedPage(query: URLSearchParams): { page: number; perPage: number } {
  const page = Math.max(1, Number.parseInt(query.get("page") ?? "1", 10) || 1);
  const perPage = Math.min(100, Math.max(1, Number.parseInt(query.get("limit") ?? "20", 10) || 20));
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
  const { page, perPage } = requestedPage(query);
  const owned = new Set(await services.stores.ownership.list(spec.kind, tenant.id));
  const mine: WireRecord[] = [];
  if (owned.size > 0) {
    const filters = new URLSearchParams(query);
    filters.delete("page");
    filters.delete("limit");
    filters.set("limit", String(SCAN_PAGE));
    let seen = 0;
    for (let p = 1; p <= MAX_SCAN_PAGES; p++) {
      filters.set("page", String(p));
      const res = await services.upstream.call(c, { method: "GET", path: `${spec.path}?${filters}` });
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
