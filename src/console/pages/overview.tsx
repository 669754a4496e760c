/** @jsxImportSource hono/jsx */
// The overview: every visible tenant's spend against its budget windows, and what the cache and coalescing saved.
import { atomicToUsd } from "../../payments/index.js";
import type { CacheSavings } from "../../operators/actions/savings.js";
import type { TenantSpend } from "../spend.js";
import { href, Page, type Viewer } from "./layout.js";
import { ChartKey, SpendChart } from "./spend-chart.js";
import type { SpendHistory } from "../spend.js";
import { HistoryChart, TopTables } from "./history-chart.js";
import { NewTenantForm, SaveError } from "./tenant-forms.js";

export function SavingsStats({ savings, live }: { savings: CacheSavings; live?: { sandboxes: number; sessions: number } }) {
  return (
    <div class="stats">
      <div class="stat" data-stat="saved">
        <b>${atomicToUsd(savings.savedAtomic)}</b>
        <span>saved by the cache and coalescing</span>
      </div>
      <div class="stat">
        <b>{savings.hits}</b>
        <span>answers served from the cache</span>
      </div>
      <div class="stat">
        <b>{savings.coalesced}</b>
        <span>calls joined to one already paying</span>
      </div>
      {live && (
        <div class="stat">
          <b>
            {live.sandboxes} / {live.sessions}
          </b>
          <span>active sandboxes / sessions</span>
        </div>
      )}
    </div>
  );
}

/** One upstream account as the overview shows it (with [[upstream.accounts]]). */
export interface AccountRow {
  id: string;
  weight: number;
  breaker: "closed" | "open" | "half-open";
  opened: number;
  live: number;
  /** Credit spend settled on it, at cost, fleet-wide since the counter started. */
  settledUsd: string;
  /** The address of its own wallet (docs/accounts.md#wallets); undefined: its tenants' x402 calls use the gateway's. */
  wallet?: string;
}

function AccountsTable({ accounts }: { accounts: AccountRow[] }) {
  return (
    <>
      <h2>Upstream accounts</h2>
      <table data-accounts>
        <thead>
          <tr>
            <th>account</th>
            <th>weight</th>
            <th>breaker</th>
            <th>times opened</th>
            <th>live here</th>
            <th>credit spend settled</th>
            <th>x402 wallet</th>
          </tr>
        </thead>
        <tbody>
          {accounts.map((a) => (
            <tr data-account={a.id}>
              <td>{a.id}</td>
              <td>{a.weight}</td>
              <td>
                <span class={`pill ${a.breaker === "closed" ? "ok" : "off"}`}>{a.breaker}</span>
              </td>
              <td>{a.opened}</td>
              <td>{a.live}</td>
              <td>${a.settledUsd}</td>
              <td>{a.wallet ? <code data-wallet={a.wallet}>{a.wallet}</code> : <span class="muted">the gateway's</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted" style="font-size:12px">
        Breakers and live counts are this gateway instance's; spend is the fleet's (docs/accounts.md). Wallet balances: the readiness check.
      </p>
    </>
  );
}

export function OverviewPage(props: {
  viewer: Viewer;
  nonce: string;
  spends: TenantSpend[];
  savings: CacheSavings;
  live: { sandboxes: number; sessions: number };
  history: SpendHistory;
  accounts?: AccountRow[];
  issued?: { tenant: string; id: string; key: string };
  formError?: string;
}) {
  const { viewer, issued } = props;
  return (
    <Page title="Overview" viewer={viewer} active="" nonce={props.nonce}>
      <h1>{viewer.admin ? "All tenants" : `Tenant ${viewer.tenant}`}</h1>
      {issued && (
        <div class="notice" data-issued={issued.id}>
          <p style="margin-top:0">
            Tenant <b data-created-tenant={issued.tenant}>{issued.tenant}</b> created with key <code>{issued.id}</code>. The key is shown
            this once and is not stored; copy it now.
          </p>
          <div class="secret" id="new-key">
            {issued.key}
          </div>
        </div>
      )}
      {props.formError && <SaveError error={props.formError} />}
      <SavingsStats savings={props.savings} live={props.live} />
      <p class="muted" style="font-size:12px">
        Savings are counted by this gateway instance since it started.
      </p>
      <h2>Spend over the last 30 days{viewer.admin ? ", all tenants" : ""}</h2>
      <div class="grid">
        <div class="card wide">
          <HistoryChart history={props.history} split="kind" label="Daily spend by kind" />
        </div>
        <div class="card wide">
          <HistoryChart history={props.history} split="surface" label="Daily spend by surface" />
        </div>
      </div>
      <TopTables history={props.history} showTenants={viewer.admin} />
      {props.accounts && <AccountsTable accounts={props.accounts} />}
      <h2>Spend against budgets</h2>
      <div class="grid">
        {props.spends.map((s) => (
          <div class="card" data-tenant={s.tenant.id}>
            <h3>
              <a href={href(`/tenants/${encodeURIComponent(s.tenant.id)}`)}>{s.tenant.id}</a>
              <span class={`pill ${s.tenant.enabled ? "ok" : "off"}`}>{s.tenant.enabled ? "enabled" : "disabled"}</span>
            </h3>
            <SpendChart windows={s.windows} />
            <ChartKey />
          </div>
        ))}
      </div>
      {viewer.canEdit && <NewTenantForm viewer={viewer} error={props.formError} />}
    </Page>
  );
}
