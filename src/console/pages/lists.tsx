/** @jsxImportSource hono/jsx */
// The list pages: the ledger with its filters, date range, paging and CSV export; the live sandboxes and sessions;
// every visible tenant's keys; a tenant's keyless tokens; and the sign-in pages (key, or a one-time link).
import type { Tenant } from "../../identity/tenants.js";
import type { LedgerEntry } from "../../state/types.js";
import type { ListedToken } from "../../operators/actions/tokens.js";
import type { LiveResource } from "../resources.js";
import { DangerForm, FormToken, href, managesKeysOf, Page, type Viewer } from "./layout.js";
import { duration, KeyTable, LedgerTable, NewKeyForm, ResourceTable, when } from "./tables.js";

export interface LedgerFilters {
  tenant?: string;
  state?: string;
  kind?: string;
  surface?: string;
  /** Days (YYYY-MM-DD, UTC), inclusive. */
  from?: string;
  to?: string;
  limit: number;
  offset: number;
}

/** The filters as a query string (paging and the CSV link keep them). */
function ledgerQueryString(f: LedgerFilters, overrides: Partial<LedgerFilters> = {}): string {
  const all = { ...f, ...overrides };
  const q = new URLSearchParams();
  for (const k of ["tenant", "state", "kind", "surface", "from", "to"] as const) if (all[k]) q.set(k, all[k]!);
  q.set("limit", String(all.limit));
  if (all.offset) q.set("offset", String(all.offset));
  return q.toString();
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

export function LedgerPage(props: {
  viewer: Viewer;
  nonce: string;
  tenants: string[];
  filters: LedgerFilters;
  entries: LedgerEntry[];
  hasMore: boolean;
}) {
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
          From (UTC day)
          <input name="from" type="date" value={f.from ?? ""} />
        </label>
        <label>
          To (UTC day)
          <input name="to" type="date" value={f.to ?? ""} />
        </label>
        <label>
          Per page
          <input name="limit" type="number" min={1} max={1000} value={String(f.limit)} style="width:90px" />
        </label>
        <button type="submit">Filter</button>
        <a class="button" href={href(`/ledger.csv?${ledgerQueryString(f, { offset: 0 })}`)} data-csv>
          Export CSV
        </a>
      </form>
      <LedgerTable entries={props.entries} showTenant={props.viewer.admin} />
      <p class="pager" data-pager>
        {f.offset > 0 && (
          <a href={href(`/ledger?${ledgerQueryString(f, { offset: Math.max(0, f.offset - f.limit) })}`)} data-page="prev">
            ← Newer
          </a>
        )}{" "}
        <span class="muted">
          entries {props.entries.length ? f.offset + 1 : 0}–{f.offset + props.entries.length}
        </span>{" "}
        {props.hasMore && (
          <a href={href(`/ledger?${ledgerQueryString(f, { offset: f.offset + f.limit })}`)} data-page="next">
            Older →
          </a>
        )}
      </p>
    </Page>
  );
}

export function ResourcesPage(props: { viewer: Viewer; nonce: string; resources: LiveResource[]; notice?: string }) {
  return (
    <Page title="Sandboxes & sessions" viewer={props.viewer} active="/resources" nonce={props.nonce}>
      <h1>Sandboxes and sessions</h1>
      {props.notice && <div class="notice">{props.notice}</div>}
      <p class="muted">
        The newest 20 of each kind per tenant, with the upstream's status now; the hold is the credit reservation still open for the
        resource's minutes, settled when it stops.
      </p>
      <ResourceTable resources={props.resources} viewer={props.viewer} showTenant={props.viewer.admin} />
    </Page>
  );
}

/** A secret shown once (a new key or token), with a copy button. */
function ShownOnce(props: { id: string; what: string; secret: string; children?: unknown }) {
  return (
    <div class="notice" data-issued={props.id}>
      <p style="margin-top:0">{props.children} It is shown this once and is not stored; copy it now.</p>
      <div class="secret" id={`new-${props.what}`}>
        {props.secret}
      </div>
      <p style="margin-bottom:0">
        <button type="button" data-copy={`new-${props.what}`}>
          Copy {props.what}
        </button>
      </p>
    </div>
  );
}

export function KeysPage(props: {
  viewer: Viewer;
  nonce: string;
  tenants: Tenant[];
  lastUsed: Map<string, number>;
  now: number;
  notice?: string;
  issued?: { tenant: string; id: string; key: string; replaced?: string; replacedExpiresAt?: string };
  /** Which tenants this page shows: one (`only`), or page `page` of `pages`. */
  paging: { page: number; pages: number; tenantCount: number; perPage: number; only?: string; all: string[] };
}) {
  const issued = props.issued;
  const p = props.paging;
  const first = (p.page - 1) * p.perPage + 1;
  return (
    <Page title="Keys" viewer={props.viewer} active="/keys" nonce={props.nonce}>
      <h1>Keys</h1>
      {issued && (
        <ShownOnce id={issued.id} what="key" secret={issued.key}>
          New key <code>{issued.id}</code> for <b>{issued.tenant}</b>
          {issued.replaced && (
            <span>
              {" "}
              in place of <code>{issued.replaced}</code>, which{" "}
              {issued.replacedExpiresAt && Date.parse(issued.replacedExpiresAt) > props.now
                ? `keeps working until ${issued.replacedExpiresAt.replace("T", " ").slice(0, 19)} UTC`
                : "has stopped working"}
            </span>
          )}
          .
        </ShownOnce>
      )}
      {props.notice && <div class="notice">{props.notice}</div>}
      <p class="muted">"Last used" is recorded at most once a minute per key.</p>
      {p.all.length > 1 && (
        <form class="filters" method="get" action={href("/keys")} data-keys-filter>
          <label>
            Tenant
            <select name="tenant">
              <option value="">All tenants</option>
              {p.all.map((id) => (
                <option value={id} selected={p.only === id}>
                  {id}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Show</button>
        </form>
      )}
      {!p.only && p.pages > 1 && (
        <p class="muted" data-keys-paging>
          Tenants {first}–{first + props.tenants.length - 1} of {p.tenantCount} · page {p.page} of {p.pages}
          {p.page > 1 && (
            <>
              {" · "}
              <a href={href(`/keys?page=${p.page - 1}`)} data-page="previous">
                Previous
              </a>
            </>
          )}
          {p.page < p.pages && (
            <>
              {" · "}
              <a href={href(`/keys?page=${p.page + 1}`)} data-page="next">
                Next
              </a>
            </>
          )}
        </p>
      )}
      {props.tenants.map((t) => (
        <section>
          <h2>{t.id}</h2>
          <KeyTable tenant={t} viewer={props.viewer} lastUsed={props.lastUsed} now={props.now} />
          {managesKeysOf(props.viewer, t.id) && <NewKeyForm tenant={t.id} viewer={props.viewer} />}
        </section>
      ))}
    </Page>
  );
}

export function TokensPage(props: {
  viewer: Viewer;
  nonce: string;
  tenant: Tenant;
  tokens: ListedToken[];
  resources: Array<{ kind: "sandbox" | "session"; id: string }>;
  maxTtlMinutes: number;
  now: number;
  notice?: string;
  minted?: { jti: string; token: string; kind: string };
}) {
  const { viewer, tenant } = props;
  const can = (scope: string) => tenant.scopes.includes(scope as never);
  return (
    <Page title="Keyless tokens" viewer={viewer} active="/tokens" nonce={props.nonce}>
      <h1>Keyless tokens</h1>
      <p class="muted">
        Short-lived tokens for an untrusted client: one sandbox, one browser session, or searches up to a cap. Revoking one stops it at
        once.
      </p>
      {props.minted && (
        <ShownOnce id={props.minted.jti} what="token" secret={props.minted.token}>
          New {props.minted.kind} token <code>{props.minted.jti}</code>.
        </ShownOnce>
      )}
      {props.notice && <div class="notice">{props.notice}</div>}
      <form class="filters" method="post" action={href("/tokens")} data-mint>
        <FormToken viewer={viewer} />
        <label>
          For
          <select name="target">
            {can("search") && <option value="search">searches (with a cap)</option>}
            {props.resources
              .filter((r) => can(r.kind === "sandbox" ? "sandboxes" : "sessions"))
              .map((r) => (
                <option value={`${r.kind}:${r.id}`}>
                  {r.kind} {r.id}
                </option>
              ))}
          </select>
        </label>
        <label>
          Search cap (USD)
          <input name="cap" placeholder="0.50" style="width:90px" />
        </label>
        <label>
          Lifetime (minutes)
          <input
            name="ttlMinutes"
            type="number"
            min={1}
            max={props.maxTtlMinutes}
            value={String(Math.min(15, props.maxTtlMinutes))}
            style="width:90px"
          />
        </label>
        <button class="primary" type="submit">
          Mint token
        </button>
      </form>
      {props.tokens.length ? (
        <table data-table="tokens">
          <thead>
            <tr>
              <th>Token id</th>
              <th>Kind</th>
              <th>For</th>
              <th>Minted (UTC)</th>
              <th>Expires in</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            {props.tokens.map((t) => (
              <tr data-token={t.jti}>
                <td>
                  <code>{t.jti}</code>
                </td>
                <td>{t.kind}</td>
                <td>{t.resource ? <code>{t.resource}</code> : t.cap ? `up to $${t.cap}` : ""}</td>
                <td>{when(t.mintedAt)}</td>
                <td>{duration(t.exp - props.now / 1000)}</td>
                <td>
                  <DangerForm
                    viewer={viewer}
                    action={href(`/tokens/${encodeURIComponent(t.jti)}/revoke`)}
                    confirm={`Revoke token ${t.jti}?`}
                    label="Revoke"
                    mark={{ "data-revoke-token": t.jti }}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No live keyless tokens.</p>
      )}
    </Page>
  );
}

export function LoginPage(props: { nonce: string; message?: string; sso?: boolean }) {
  return (
    <Page title="Sign in" nonce={props.nonce}>
      <form class="login" method="post" action={href("/login")}>
        <h1>Sign in</h1>
        <p class="muted">
          Use an admin key to see every tenant, an operator-readonly key to see every tenant without changing anything, or a tenant key to
          see your own. Operators can also run <code>tollgate console link</code> for a one-time sign-in link.
        </p>
        {props.message && <div class="notice bad">{props.message}</div>}
        {props.sso && (
          <p>
            <a class="button primary" href={href("/oidc/login")} data-sso>
              Sign in with your identity provider
            </a>
          </p>
        )}
        <label for="key">API key</label>
        <input id="key" name="key" type="password" autocomplete="off" required />
        <button class="primary" type="submit">
          Sign in
        </button>
      </form>
    </Page>
  );
}

/** A sign-in link's landing page: the code is used up only by the button (a link preview does not sign anyone in). */
export function LinkPage(props: { nonce: string; code?: string; tenant?: string }) {
  return (
    <Page title="Sign in" nonce={props.nonce}>
      <form class="login" method="post" action={href("/link")}>
        <h1>Sign in</h1>
        {props.tenant && props.code ? (
          <div>
            <p>
              This one-time link signs you in as <b data-link-tenant>{props.tenant}</b>.
            </p>
            <input type="hidden" name="code" value={props.code} />
            <button class="primary" type="submit">
              Continue
            </button>
          </div>
        ) : (
          <div class="notice bad">This sign-in link is used up, expired or unknown; ask for a new one.</div>
        )}
        <p class="muted" style="margin-bottom:0">
          <a href={href("/login")}>Sign in with a key instead</a>
        </p>
      </form>
    </Page>
  );
}

/**
 * A page that moves on by itself (meta refresh, no script): after the provider's callback, so the console's SameSite=Strict
 * cookie is sent on a navigation of the console's own making; before the provider's logout, which a form's
 * `form-action 'self'` would not let a redirect reach.
 */
export function MovingOnPage(props: { nonce: string; title: string; message: string; to: string }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta http-equiv="refresh" content={`0;url=${props.to}`} />
        <title>{`${props.title} · Tollgate console`}</title>
      </head>
      <body>
        <p>
          {props.message} <a href={props.to}>Continue</a>
        </p>
      </body>
    </html>
  );
}
