/** @jsxImportSource hono/jsx */
// The list pages: the ledger with its filters, the live sandboxes and sessions, every visible tenant's keys.
import type { Tenant } from "../../tenants.js";
import type { LedgerEntry } from "../../state/types.js";
import type { LiveResource } from "../resources.js";
import { href, Page, type Viewer } from "./layout.js";
import { KeyTable, LedgerTable, NewKeyForm, ResourceTable } from "./tables.js";

export interface LedgerFilters {
  tenant?: string;
  state?: string;
  kind?: string;
  surface?: string;
  limit: number;
}

function Select(props: { name: string; label: string; value?: string; options: string[] }) {
  return (
    <label>
      {props.label}
      <select name={props.name}>
        <option value="">any</option>
        {props.options.map((o) => (
          <option value={o} selected={props.value === o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

export function LedgerPage(props: { viewer: Viewer; nonce: string; tenants: string[]; filters: LedgerFilters; entries: LedgerEntry[] }) {
  const f = props.filters;
  return (
    <Page title="Ledger" viewer={props.viewer} active="/ledger" nonce={props.nonce}>
      <h1>Ledger</h1>
      <form class="filters" method="get" action={href("/ledger")}>
        {props.viewer.admin && <Select name="tenant" label="Tenant" value={f.tenant} options={props.tenants} />}
        <Select name="state" label="State" value={f.state} options={["reserved", "committed", "released", "uncertain"]} />
        <Select name="kind" label="Kind" value={f.kind} options={["x402", "credits"]} />
        <Select name="surface" label="Surface" value={f.surface} options={["search", "fetch", "session", "sandbox", "other"]} />
        <label>
          Limit
          <input name="limit" type="number" min={1} max={1000} value={String(f.limit)} style="width:90px" />
        </label>
        <button type="submit">Filter</button>
      </form>
      <LedgerTable entries={props.entries} showTenant={props.viewer.admin} />
    </Page>
  );
}

export function ResourcesPage(props: { viewer: Viewer; nonce: string; resources: LiveResource[]; notice?: string }) {
  return (
    <Page title="Sandboxes & sessions" viewer={props.viewer} active="/resources" nonce={props.nonce}>
      <h1>Sandboxes and sessions</h1>
      {props.notice && <div class="notice">{props.notice}</div>}
      <p class="muted">The newest 20 of each kind per tenant, with the upstream's status now.</p>
      <ResourceTable resources={props.resources} viewer={props.viewer} showTenant={props.viewer.admin} />
    </Page>
  );
}

export function KeysPage(props: {
  viewer: Viewer;
  nonce: string;
  tenants: Tenant[];
  notice?: string;
  issued?: { tenant: string; id: string; key: string };
}) {
  return (
    <Page title="Keys" viewer={props.viewer} active="/keys" nonce={props.nonce}>
      <h1>Keys</h1>
      {props.issued && (
        <div class="notice" data-issued={props.issued.id}>
          <p style="margin-top:0">
            New key <code>{props.issued.id}</code> for <b>{props.issued.tenant}</b>. It is shown this once and is not stored; copy it now.
          </p>
          <div class="secret" id="new-key">
            {props.issued.key}
          </div>
          <p style="margin-bottom:0">
            <button type="button" data-copy="new-key">
              Copy
            </button>
          </p>
        </div>
      )}
      {props.notice && <div class="notice">{props.notice}</div>}
      {props.tenants.map((t) => (
        <section>
          <h2>{t.id}</h2>
          <KeyTable tenant={t} viewer={props.viewer} />
          {props.viewer.admin && <NewKeyForm tenant={t.id} viewer={props.viewer} />}
        </section>
      ))}
    </Page>
  );
}

export function LoginPage(props: { nonce: string; message?: string }) {
  return (
    <Page title="Sign in" nonce={props.nonce}>
      <form class="login" method="post" action={href("/login")}>
        <h1>Sign in</h1>
        <p class="muted">Use an admin key to see every tenant, or a tenant key to see your own.</p>
        {props.message && <div class="notice bad">{props.message}</div>}
        <label for="key">API key</label>
        <input id="key" name="key" type="password" autocomplete="off" required />
        <button class="primary" type="submit">
          Sign in
        </button>
      </form>
    </Page>
  );
}
