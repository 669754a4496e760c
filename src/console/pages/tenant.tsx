/** @jsxImportSource hono/jsx */
// One tenant: spend per window in figures and bars, quotas in use, alert settings, keys, live resources, recent ledger.
import { atomicToUsd } from "../../payments/money.js";
import type { CacheSavings } from "../../operators/savings.js";
import type { AuditEntry, LedgerEntry } from "../../state/types.js";
import type { LiveResource } from "../resources.js";
import type { TenantSpend } from "../spend.js";
import { href, Page, type Viewer } from "./layout.js";
import { SavingsStats } from "./overview.js";
import { ChartKey, SpendChart } from "./spend-chart.js";
import { AlertSettings } from "./audit.js";
import { AuditTable, KeyTable, LedgerTable, NewKeyForm, ResourceTable } from "./tables.js";

export function TenantPage(props: {
  viewer: Viewer;
  nonce: string;
  spend: TenantSpend;
  savings: CacheSavings;
  thresholds: number[];
  resources: LiveResource[];
  ledger: LedgerEntry[];
  audit: AuditEntry[];
}) {
  const { tenant } = props.spend;
  const { viewer } = props;
  return (
    <Page title={tenant.id} viewer={viewer} active="" nonce={props.nonce}>
      <h1 data-tenant-page={tenant.id}>
        Tenant {tenant.id} <span class={`pill ${tenant.enabled ? "ok" : "off"}`}>{tenant.enabled ? "enabled" : "disabled"}</span>
      </h1>
      <SavingsStats savings={props.savings} />
      <div class="grid">
        <div class="card">
          <h3>Spend against budgets</h3>
          <SpendChart windows={props.spend.windows} />
          <ChartKey />
        </div>
        <div class="card">
          <h3>Budget windows</h3>
          <table>
            <thead>
              <tr>
                <th>Window</th>
                <th class="num">Spent</th>
                <th class="num">x402</th>
                <th class="num">Credits</th>
                <th class="num">Limit</th>
              </tr>
            </thead>
            <tbody>
              {props.spend.windows.map((w) => (
                <tr data-window-row={w.window}>
                  <td>{w.window}</td>
                  <td class="num" data-spent={w.window}>
                    {atomicToUsd(w.spent)}
                  </td>
                  <td class="num">{atomicToUsd(w.x402)}</td>
                  <td class="num">{atomicToUsd(w.credits)}</td>
                  <td class="num">{w.limit !== undefined ? atomicToUsd(w.limit) : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="muted" style="font-size:12px">
            Scopes: {tenant.scopes.join(", ") || "none"} · on exhaustion: {tenant.onExhausted}
            {tenant.quotas.maxSandboxes !== undefined && ` · max sandboxes ${tenant.quotas.maxSandboxes}`}
            {tenant.quotas.maxSessions !== undefined && ` · max sessions ${tenant.quotas.maxSessions}`}
          </p>
        </div>
        <div class="card">
          <h3>Alerts</h3>
          <AlertSettings tenant={tenant} thresholds={props.thresholds} />
        </div>
      </div>
      <h2>Keys</h2>
      <KeyTable tenant={tenant} viewer={viewer} />
      {viewer.admin && <NewKeyForm tenant={tenant.id} viewer={viewer} />}
      <h2>Sandboxes and sessions</h2>
      <ResourceTable resources={props.resources} viewer={viewer} showTenant={false} />
      <h2>
        Recent ledger{" "}
        <a href={href(`/ledger?tenant=${encodeURIComponent(tenant.id)}`)} style="font-size:13px">
          all entries
        </a>
      </h2>
      <LedgerTable entries={props.ledger} showTenant={false} />
      <h2>Recent changes and alerts</h2>
      <AuditTable entries={props.audit} viewer={viewer} />
    </Page>
  );
}
