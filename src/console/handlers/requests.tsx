/** @jsxImportSource hono/jsx */
// The console's Requests page: the request logs read through ../../operators/actions/request-log.ts as the admin API
// reads them; a tenant sees its own only. A malformed search is shown at the top of the page, not as an error page.
import { GatewayError } from "../../errors.js";
import type { GatewayServices } from "../../services.js";
import { requestsCsv, searchRequests, type RequestView } from "../../operators/actions/request-log.js";
import { RequestsPage, type RequestFilters } from "../pages/requests.js";
import { type Pages, render, visibleTenant, visibleTenants } from "../kit.js";

const FIELDS = ["status", "route", "code", "method", "id", "from", "to", "limit"] as const;

export function requestPages(services: GatewayServices): Pages {
  return {
    "console.requests": async (c) => {
      const viewer = c.get("viewer");
      const q = c.req.query();
      const filters: RequestFilters = {};
      for (const k of FIELDS) if (q[k]) filters[k] = q[k]!.slice(0, 256);
      if (viewer.admin && q.tenant) filters.tenant = visibleTenant(services, c, q.tenant).id;
      const tenants = viewer.admin ? (filters.tenant ? [filters.tenant] : visibleTenants(services, c).map((t) => t.id)) : [viewer.tenant];
      let rows: RequestView[] = [];
      let error: string | undefined;
      try {
        rows = await searchRequests(services, tenants, filters);
      } catch (err) {
        if (!(err instanceof GatewayError) || err.status !== 400) throw err;
        error = err.message;
      }
      const format = q.format;
      if (format === "csv" || format === "json") {
        if (error) throw new GatewayError(400, "invalid_params", error);
        const name = `tollgate-requests-${(filters.tenant ?? (viewer.admin ? "all" : viewer.tenant)).replace(/[^A-Za-z0-9_.-]/g, "_")}`;
        const headers = { "content-disposition": `attachment; filename="${name}.${format}"` };
        if (format === "json") return c.json({ requests: rows }, 200, headers);
        return c.body(requestsCsv(rows), 200, { ...headers, "content-type": "text/csv; charset=utf-8" });
      }
      return render(
        c,
        <RequestsPage
          viewer={viewer}
          nonce={c.get("nonce")}
          tenants={visibleTenants(services, c)}
          filters={filters}
          rows={rows}
          keep={services.config.requestLog.keep}
          error={error}
        />,
        error ? 400 : 200,
      );
    },
  };
}
