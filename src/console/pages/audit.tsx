/** @jsxImportSource hono/jsx */
// Alerts (the thresholds in force, where they go, the alerts raised) and the audit log of admin actions.
import type { Tenant } from "../../identity/tenants.js";
import type { AuditEntry } from "../../state/types.js";
import { href, Page, type Viewer } from "./layout.js";
import { AuditTable } from "./tables.js";

/** A receiver by host only: a webhook URL may carry a token in its path or query. */
const receiverHost = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid)";
  }
};

export function AlertSettings({
  tenant,
  thresholds,
  globalWebhooks = [],
}: {
  tenant: Tenant;
  thresholds: number[];
  globalWebhooks?: string[];
}) {
  const own = tenant.alerts?.thresholds;
  const receivers = [...new Set([...globalWebhooks, ...(tenant.alerts?.webhooks ?? [])])].map(receiverHost);
  return (
    <p data-alerts={tenant.id} style="margin:0">
      Thresholds: {(own ?? thresholds).map((t) => `${t}%`).join(", ")} {own ? "(tenant's own)" : "(gateway default)"}
      <br />
      Receivers: {receivers.length ? receivers.join(", ") : <span class="muted">none — alerts are only recorded here</span>}
    </p>
  );
}

export function AuditPage(props: {
  viewer: Viewer;
  nonce: string;
  tenants: Tenant[];
  thresholds: number[];
  globalWebhooks: string[];
  alerts: AuditEntry[];
  entries: AuditEntry[];
  next?: number;
  filters: { action?: string; actor?: string; since?: string; until?: string };
}) {
  const f = props.filters;
  const keep = new URLSearchParams(Object.entries(f).filter((e): e is [string, string] => !!e[1]));
  return (
    <Page title="Audit & alerts" viewer={props.viewer} active="/audit" nonce={props.nonce}>
      <h1>Alerts</h1>
      <table>
        <thead>
          <tr>
            <th>Tenant</th>
            <th>Alert settings</th>
          </tr>
        </thead>
        <tbody>
          {props.tenants.map((t) => (
            <tr>
              <td>{t.id}</td>
              <td>
                <AlertSettings tenant={t} thresholds={props.thresholds} globalWebhooks={props.globalWebhooks} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Alerts raised</h2>
      <AuditTable entries={props.alerts} viewer={props.viewer} />
      <h2>Audit log</h2>
      <form class="filters" method="get" action={href("/audit")} data-audit-filters>
        <label>
          Action (or prefix ending in ".")
          <input name="action" value={f.action ?? ""} placeholder="key." />
        </label>
        {props.viewer.admin && (
          <label>
            Actor
            <input name="actor" value={f.actor ?? ""} placeholder="ops" />
          </label>
        )}
        <label>
          Since (UTC day)
          <input name="since" type="date" value={f.since ?? ""} />
        </label>
        <label>
          Until (UTC day, inclusive)
          <input name="until" type="date" value={f.until ?? ""} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <section data-audit-log>
        <AuditTable entries={props.entries} viewer={props.viewer} />
      </section>
      {props.next !== undefined && (
        <p>
          <a href={href(`/audit?${keep.toString() ? `${keep}&` : ""}before=${props.next}`)} data-page="next">
            Older entries
          </a>
        </p>
      )}
    </Page>
  );
}
