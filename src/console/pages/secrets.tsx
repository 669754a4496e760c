/** @jsxImportSource hono/jsx */
// The Secrets page (issue 57): one tenant's secrets with their rules and last use, a form to add or replace one (the
// value in a password input, never filled back in) and Delete with a confirmation. A tenant sees and manages its own;
// an operator picks a tenant; a read-only operator sees the list and no form. No value is on this page, ever: the
// vault answers rules only (src/identity/tenant-secrets.ts, SecretView).
import type { SecretView } from "../../identity/tenant-secrets.js";
import { DangerForm, FormToken, href, Page, type Viewer } from "./layout.js";

/** What the form is filled with again after a refusal (never the value), and what is wrong, by field. */
export interface SecretFormState {
  name?: string;
  hosts?: string;
  methods?: string[];
  paths?: string;
  header?: string;
  format?: string;
  sandboxes?: string;
  images?: string;
  snapshots?: string;
  errors?: Partial<Record<SecretFormField, string>>;
}
export type SecretFormField = "name" | "value" | "hosts" | "methods" | "paths" | "header" | "format" | "sandboxes" | "images" | "snapshots";

const SECRET_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

const stamp = (iso: string | null) => (iso ? iso.replace("T", " ").replace(/(\.\d+)?Z$/, "") : undefined);

function SecretTable(props: { tenant: string; secrets: SecretView[]; viewer: Viewer; manage: boolean }) {
  if (!props.secrets.length) return <p class="muted">No secrets yet.</p>;
  return (
    <table data-table="secrets" data-tenant={props.tenant}>
      <thead>
        <tr>
          <th>Name</th>
          <th>Hosts</th>
          <th>Methods</th>
          <th>Paths</th>
          <th>Header</th>
          <th>Sandboxes</th>
          <th>Updated (UTC)</th>
          <th>Last used (UTC)</th>
          {props.manage && <th></th>}
        </tr>
      </thead>
      <tbody>
        {props.secrets.map((s) => (
          <tr data-secret={s.name}>
            <td>
              <code>{s.name}</code>
            </td>
            <td data-hosts>{s.hosts.join(", ")}</td>
            <td>{s.methods?.join(", ") ?? <span class="muted">any</span>}</td>
            <td>{s.paths?.join(", ") ?? <span class="muted">any</span>}</td>
            <td>
              <code>
                {s.header}: {s.format}
              </code>
            </td>
            <td data-sandboxes>
              {s.sandboxes}
              {s.images?.length ? <span class="muted"> · images {s.images.join(", ")}</span> : null}
              {s.snapshots?.length ? <span class="muted"> · snapshots {s.snapshots.join(", ")}</span> : null}
            </td>
            <td>
              {stamp(s.updatedAt)} <span class="muted">v{s.version}</span>
            </td>
            <td data-last-used={s.lastUsedAt ?? ""}>{stamp(s.lastUsedAt) ?? <span class="muted">never</span>}</td>
            {props.manage && (
              <td>
                <DangerForm
                  viewer={props.viewer}
                  action={href(`/tenants/${encodeURIComponent(props.tenant)}/secrets/${s.name}/delete`)}
                  confirm={`Delete secret ${s.name} of ${props.tenant}? Its placeholders stop working at once.`}
                  label="Delete"
                  mark={{ "data-delete": s.name }}
                />
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A field's error under it, tied to its input for screen readers. */
const FieldError = ({ name, error }: { name: SecretFormField; error?: string }) =>
  error ? (
    <span class="field-error" id={`secret-${name}-error`} data-field-error={name} role="alert">
      {error}
    </span>
  ) : null;

const described = (name: SecretFormField, error?: string) =>
  error ? { "aria-invalid": "true", "aria-describedby": `secret-${name}-error` } : {};

function SecretForm(props: { tenant: string; viewer: Viewer; state: SecretFormState }) {
  const s = props.state;
  const e = s.errors ?? {};
  return (
    <form
      method="post"
      action={href(`/tenants/${encodeURIComponent(props.tenant)}/secrets`)}
      class="card edit"
      id="secret-form"
      data-secret-form={props.tenant}
      autocomplete="off"
    >
      <h3>Add or replace a secret</h3>
      <FormToken viewer={props.viewer} />
      <div class="filters">
        <label>
          Name (an environment variable's)
          <input name="name" value={s.name ?? ""} placeholder="OPENAI_API_KEY" maxlength={64} required {...described("name", e.name)} />
          <FieldError name="name" error={e.name} />
        </label>
        <label>
          Value (written, never shown again)
          <input name="value" type="password" autocomplete="new-password" required {...described("value", e.value)} />
          <FieldError name="value" error={e.value} />
        </label>
        <label>
          Hosts (host or host:port, comma-separated)
          <input name="hosts" value={s.hosts ?? ""} placeholder="api.openai.com" size={36} required {...described("hosts", e.hosts)} />
          <FieldError name="hosts" error={e.hosts} />
        </label>
      </div>
      <fieldset class="scopes" {...described("methods", e.methods)}>
        <legend>Methods (none ticked: any)</legend>
        {SECRET_METHODS.map((m) => (
          <label class="check">
            <input type="checkbox" name="methods" value={m} checked={s.methods?.includes(m)} /> {m}
          </label>
        ))}
        <FieldError name="methods" error={e.methods} />
      </fieldset>
      <div class="filters">
        <label>
          Path prefixes (comma-separated; empty: any)
          <input name="paths" value={s.paths ?? ""} placeholder="/v1/" size={24} {...described("paths", e.paths)} />
          <FieldError name="paths" error={e.paths} />
        </label>
        <label>
          Header
          <input name="header" value={s.header ?? "authorization"} size={16} {...described("header", e.header)} />
          <FieldError name="header" error={e.header} />
        </label>
        <label>
          Format ({"{}"} is the value)
          <input name="format" value={s.format ?? "Bearer {}"} size={16} {...described("format", e.format)} />
          <FieldError name="format" error={e.format} />
        </label>
        <label>
          Sandboxes
          <select name="sandboxes" {...described("sandboxes", e.sandboxes)}>
            <option value="all" selected={(s.sandboxes ?? "all") === "all"}>
              all of the tenant's
            </option>
            <option value="on-request" selected={s.sandboxes === "on-request"}>
              on request (env NAME=tollgate:secret)
            </option>
          </select>
          <FieldError name="sandboxes" error={e.sandboxes} />
        </label>
        <label>
          Only sandboxes from images (comma-separated; empty: any)
          <input name="images" value={s.images ?? ""} placeholder="node" size={16} {...described("images", e.images)} />
          <FieldError name="images" error={e.images} />
        </label>
        <label>
          or snapshots
          <input name="snapshots" value={s.snapshots ?? ""} size={16} {...described("snapshots", e.snapshots)} />
          <FieldError name="snapshots" error={e.snapshots} />
        </label>
      </div>
      <button class="primary" type="submit" data-save-secret>
        Save secret
      </button>
    </form>
  );
}

export function SecretsPage(props: {
  viewer: Viewer;
  nonce: string;
  /** The tenants an operator may pick (a tenant viewer: its own only). */
  tenants: string[];
  /** The tenant shown (none: an operator has not picked one). */
  tenant?: string;
  secrets: SecretView[];
  /** Whether the viewer may add, replace and delete this tenant's secrets. */
  manage: boolean;
  notice?: string;
  form?: SecretFormState;
}) {
  const { viewer, tenant } = props;
  return (
    <Page title="Secrets" viewer={viewer} active="/secrets" nonce={props.nonce}>
      <h1>Secrets{tenant && viewer.admin ? ` of ${tenant}` : ""}</h1>
      <p class="muted">
        Values the tenant's agents use without holding them: its sandboxes get a placeholder, and the gateway's egress writes the value
        towards the secret's hosts only. A value is never shown again, here or anywhere.
      </p>
      {props.notice && (
        <div class="notice" data-notice>
          {props.notice}
        </div>
      )}
      {props.form?.errors && (
        <div class="notice bad" role="alert" data-save-error>
          <b>Not saved.</b> Correct the fields marked below and enter the value again. <a href="#secret-form">Back to the form</a>
        </div>
      )}
      {viewer.admin && (
        <form class="filters" method="get" action={href("/secrets")} data-secrets-tenant>
          <label>
            Tenant
            <select name="tenant">
              {!tenant && <option value="">Pick a tenant</option>}
              {props.tenants.map((id) => (
                <option value={id} selected={tenant === id}>
                  {id}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Show</button>
        </form>
      )}
      {tenant ? (
        <>
          <SecretTable tenant={tenant} secrets={props.secrets} viewer={viewer} manage={props.manage} />
          {props.manage && <SecretForm tenant={tenant} viewer={viewer} state={props.form ?? {}} />}
          <p class="muted">
            "Last used" is recorded at most once a minute per gateway instance. The command line does the same:{" "}
            <code>tollgate secrets list{viewer.admin ? ` --tenant ${tenant}` : ""}</code>.
          </p>
        </>
      ) : (
        <p class="muted">Pick a tenant to see its secrets.</p>
      )}
    </Page>
  );
}
