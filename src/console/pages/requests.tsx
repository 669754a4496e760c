/** @jsxImportSource hono/jsx */
// The Requests page: the visible tenants' last requests (route, status, latency, spend, error code, request and trace
// id), searched by tenant, status, route, error code and time, and exported as CSV or JSON.
import type { Tenant } from "../../identity/tenants.js";
import type { RequestSearch, RequestView } from "../../operators/actions/request-log.js";
import { href, Page, type Viewer } from "./layout.js";

export type RequestFilters = RequestSearch & { tenant?: string };

const statusClass = (s: number) => (s >= 500 ? "bad" : s >= 400 ? "warn" : "ok");

export function RequestsPage(props: {
  viewer: Viewer;
  nonce: string;
  tenants: Tenant[];
  filters: RequestFilters;
  rows: RequestView[];
  keep: number;
  error?: string;
}) {
  const f = props.filters;
  const keep = new URLSearchParams(Object.entries(f).filter((e): e is [string, string] => typeof e[1] === "string" && e[1] !== ""));
  const exportHref = (format: string) => href(`/requests?${keep.toString() ? `${keep}&` : ""}format=${format}`);
  return (
    <Page title="Requests" viewer={props.viewer} active="/requests" nonce={props.nonce}>
      {props.error && (
        <div class="notice bad" role="alert" data-error>
          {props.error}
        </div>
      )}
      <h1>Requests</h1>
      <p class="muted">
        The last {props.keep} requests of each tenant: route, status, latency, spend and error code; no bodies, headers or credentials.
      </p>
      <form class="filters" method="get" action={href("/requests")} data-request-filters>
        {props.viewer.admin && (
          <label>
            Tenant
            <select name="tenant">
              <option value="">All tenants</option>
              {props.tenants.map((t) => (
                <option value={t.id} selected={f.tenant === t.id}>
                  {t.id}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Status
          <input name="status" value={f.status ?? ""} placeholder="4xx, 402, error" size={10} />
        </label>
        <label>
          Route
          <input name="route" value={f.route ?? ""} placeholder="x402.web.search, sandbox, /api/" />
        </label>
        <label>
          Error code
          <input name="code" value={f.code ?? ""} placeholder="budget_exceeded" />
        </label>
        <label>
          From
          <input name="from" value={f.from ?? ""} placeholder="2026-11-28 or …T12:00:00Z" size={14} />
        </label>
        <label>
          To (a day: inclusive)
          <input name="to" value={f.to ?? ""} placeholder="2026-11-28" size={14} />
        </label>
        <button type="submit">Search</button>
        <a href={exportHref("csv")} data-export="csv">
          Export CSV
        </a>
        <a href={exportHref("json")} data-export="json">
          Export JSON
        </a>
      </form>
      <table data-requests>
        <thead>
          <tr>
            <th>Time (UTC)</th>
            {props.viewer.admin && <th>Tenant</th>}
            <th>Request</th>
            <th>Route</th>
            <th>Status</th>
            <th>Latency</th>
            <th>Spend</th>
            <th>Error code</th>
            <th>Request id / trace</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr data-request={r.id}>
              <td>{r.time.replace("T", " ").slice(0, 23)}</td>
              {props.viewer.admin && <td>{r.tenant}</td>}
              <td>
                <code>{r.method}</code> {r.path}
              </td>
              <td>{r.route}</td>
              <td>
                <span class={`pill ${statusClass(r.status)}`} data-status={r.status}>
                  {r.status}
                </span>
              </td>
              <td>
                {r.durationMs} ms{r.upstreamMs !== undefined ? <span class="muted"> (upstream {r.upstreamMs})</span> : ""}
              </td>
              <td>
                {r.spendUsd ? `$${r.spendUsd}` : r.heldUsd ? "" : <span class="muted">—</span>}
                {r.heldUsd ? <span class="muted"> held ${r.heldUsd}</span> : ""}
              </td>
              <td>{r.code ? <code>{r.code}</code> : ""}</td>
              <td>
                <code>{r.id}</code>
                {r.traceId ? (
                  <>
                    <br />
                    <span class="muted">trace {r.traceId}</span>
                  </>
                ) : (
                  ""
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {!props.rows.length && <p class="muted">No request matches.</p>}
    </Page>
  );
}
