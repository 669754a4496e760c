/** @jsxImportSource hono/jsx */
// One tenant: spend per window in figures and bars, quotas in use, alert settings, keys, live resources, recent ledger.
import { atomicToUsd } from "../../payments/index.js";
import type { CacheSavings } from "../../operators/actions/savings.js";
import type { AuditEntry, LedgerEntry } from "../../state/types.js";
import type { LiveResource } from "../resources.js";
import type { TenantSpend } from "../spend.js";
import { href, Page, type Viewer } from "./layout.js";
import { SavingsStats } from "./overview.js";
import { ChartKey, SpendChart } from "./spend-chart.js";
import { AlertSettings } from "./audit.js";
import { AuditTable, KeyTable, LedgerTable, NewKeyForm, ResourceTable } from "./tables.js";
import type { SpendHistory } from "../spend.js";
import { HistoryChart, TopTables } from "./history-chart.js";
import { EnableForm, SaveError, TenantEditForm } from "./tenant-forms.js";
import { managesKeysOf } from "./layout.js";

export function TenantPage(props: {
  viewer: Viewer;
  nonce: string;
  spend: TenantSpend;
  savings: CacheSavings;
  thresholds: number[];
  resources: LiveResource[];
  ledger: LedgerEntry[];
  audit: AuditEntry[];
  history: SpendHistory;
  lastUsed: Map<string, number>;
  now: number;
  notice?: string;
  formError?: string;
  /** The gateway's config file, when it owns this tenant: its settings are shown read-only. */
  ownedBy?: string;
}) {
  const { tenant } = props.spend;
  const { viewer } = props;
  return (
    <Page title={tenant.id} viewer={viewer} active="" nonce={props.nonce}>
      <h1 data-tenant-page={tenant.id}>
        Tenant {tenant.id}{" "}
        <span class={`pill ${tenant.enabled ? "ok" : "off"}`} data-enabled={String(tenant.enabled)}>
          {tenant.enabled ? "enabled" : "disabled"}
        </span>{" "}
        {viewer.canEdit && <EnableForm tenant={tenant} viewer={viewer} />}
      </h1>
      {props.notice && <div class="notice">{props.notice}</div>}
      {props.formError && <SaveError error={props.formError} />}
      <SavingsStats savings={props.savings} />
      <div class="grid">
        <div class="card wide">
          <HistoryChart history={props.history} split="kind" label="Daily spend by kind" />
        </div>
        <div class="card wide">
          <HistoryChart history={props.history} split="surface" label="Daily spend by surface" />
        </div>
      </div>
      <TopTables history={props.history} showTenants={false} />
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
          <p class="muted" style="font-size:12px" data-settings>
            Scopes: {tenant.scopes.join(", ") || "none"} · on exhaustion: {tenant.onExhausted}
            {tenant.quotas.requestsPerMinute !== undefined && ` · rate limit ${tenant.quotas.requestsPerMinute}/min`}
            {tenant.quotas.maxSandboxes !== undefined && ` · max sandboxes ${tenant.quotas.maxSandboxes}`}
            {tenant.quotas.maxSessions !== undefined && ` · max sessions ${tenant.quotas.maxSessions}`}
          </p>
        </div>
        <div class="card">
          <h3>Alerts</h3>
          <AlertSettings tenant={tenant} thresholds={props.thresholds} />
        </div>
      </div>
      {viewer.canEdit && <TenantEditForm tenant={tenant} viewer={viewer} error={props.formError} ownedBy={props.ownedBy} />}
      <h2>Keys</h2>
      <KeyTable tenant={tenant} viewer={viewer} lastUsed={props.lastUsed} now={props.now} />
      {managesKeysOf(viewer, tenant.id) && <NewKeyForm tenant={tenant.id} viewer={viewer} />}
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
