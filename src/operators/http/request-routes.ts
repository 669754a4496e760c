// The request logs' HTTP face (../actions/request-log.ts): a tenant searches its own (/_tollgate/requests, and one by
// id: another tenant's id answers 404), an operator any tenant's, or every tenant's (/_tollgate/admin/requests). JSON,
// or CSV with format=csv.
import type { Context } from "hono";
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { callerTenant } from "../../identity/caller.js";
import type { Handlers } from "../../routing/handlers.js";
import { requestsCsv, searchRequests, tenantRequest, type RequestSearch, type RequestView } from "../actions/request-log.js";

const SEARCH_FIELDS = ["status", "route", "code", "method", "id", "from", "to", "limit"] as const;

/** The search a query string names. */
function searchOf(c: Context): RequestSearch {
  const q: RequestSearch = {};
  for (const k of SEARCH_FIELDS) {
    const v = c.req.query(k);
    if (v !== undefined) q[k] = v;
  }
  return q;
}

/** The answer in the format asked (json by default, csv as a download named after `who`). */
function requestsAnswer(c: Context, rows: RequestView[], who: string): Response {
  const format = c.req.query("format") ?? "json";
  if (format === "json") return c.json({ requests: rows });
  if (format !== "csv") throw new GatewayError(400, "invalid_params", "format: expected json or csv", { field: "format" });
  const day = new Date().toISOString().slice(0, 10);
  return c.body(requestsCsv(rows), 200, {
    "content-type": "text/csv; charset=utf-8",
    "content-disposition": `attachment; filename="tollgate-requests-${who.replace(/[^A-Za-z0-9_.-]/g, "_")}-${day}.csv"`,
  });
}

/** The tenants an operator's search covers: the one named (404 when unknown), or all of them. */
function tenantsOf(services: GatewayServices, tenant: string | undefined): string[] {
  if (!tenant) return services.directory.list().map((t) => t.id);
  if (!services.directory.get(tenant)) throw new GatewayError(404, "not_found", `No tenant ${tenant}.`);
  return [tenant];
}

export function requestLogHandlers(services: GatewayServices): Handlers {
  return {
    "own.requests": async (c) => {
      const tenant = callerTenant(c).id;
      // ?tenant= names another tenant's log: that is the admin route's; never answer with the caller's own instead.
      const asked = c.req.query("tenant");
      if (asked !== undefined && asked !== tenant)
        throw new GatewayError(
          400,
          "invalid_params",
          `/_tollgate/requests is the caller's own log (tenant "${tenant}"); an operator reads another tenant's at /_tollgate/admin/requests?tenant=${encodeURIComponent(asked)}.`,
          { field: "tenant" },
        );
      return requestsAnswer(c, await searchRequests(services, [tenant], searchOf(c)), tenant);
    },
    "own.requests.get": async (c) => c.json(await tenantRequest(services, callerTenant(c).id, c.req.param("id") ?? "")),
    "admin.requests": async (c) => {
      const tenant = c.req.query("tenant") || undefined;
      return requestsAnswer(c, await searchRequests(services, tenantsOf(services, tenant), searchOf(c)), tenant ?? "all");
    },
  };
}
