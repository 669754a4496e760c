/** @jsxImportSource hono/jsx */
// The admin's forms for tenants: create one (its first key shown once), and edit one's scopes, budget, quotas, rate
// limit, what happens on exhaustion and its alert receivers; enable or disable it. The answers go through the admin
// API's own schemas and actions (src/routing/admin-schemas.ts, src/operators/actions/), so the console can set nothing the API would refuse.
import { SCOPES } from "../../../config/tenant-schema.js";
import type { Tenant } from "../../identity/tenants.js";
import { FormToken, href, type Viewer } from "./layout.js";

function Field(props: { name: string; label: string; value?: string | number; placeholder?: string; type?: string; width?: string }) {
  return (
    <label>
      {props.label}
      <input
        name={props.name}
        type={props.type ?? "text"}
        value={props.value === undefined ? "" : String(props.value)}
        placeholder={props.placeholder ?? ""}
        style={`width:${props.width ?? "110px"}`}
      />
    </label>
  );
}

function ScopeBoxes({ scopes }: { scopes: readonly string[] }) {
  return (
    <fieldset class="scopes">
      <legend>Scopes</legend>
      {SCOPES.map((s) => (
        <label class="check">
          <input type="checkbox" name="scopes" value={s} checked={scopes.includes(s)} /> {s}
        </label>
      ))}
    </fieldset>
  );
}

/**
 * A save the gateway refused, at the top of the page (where the page opens after the form is sent), naming the field
 * at fault and pointing at the form, which keeps the same message beside the fields.
 */
export function SaveError({ error }: { error: string }) {
  return (
    <div class="notice bad" role="alert" data-save-error>
      <b>Not saved.</b> {error} <a href="#save-form">Back to the form</a>
    </div>
  );
}

/**
 * The tenant's settings. A tenant the gateway's config file owns (`ownedBy`: that file) shows them read-only, with the
 * reason and what to do: the admin API refuses to change them (docs/config-as-code.md#one-owner-per-tenant).
 */
export function TenantEditForm({ tenant, viewer, error, ownedBy }: { tenant: Tenant; viewer: Viewer; error?: string; ownedBy?: string }) {
  const q = tenant.quotas;
  return (
    <form
      method="post"
      action={href(`/tenants/${encodeURIComponent(tenant.id)}/settings`)}
      class="card edit"
      id="save-form"
      data-edit-tenant={tenant.id}
      {...(ownedBy ? { "data-owned-by": ownedBy } : {})}
    >
      <h3>Settings</h3>
      {ownedBy && (
        <div class="notice" data-file-owned>
          Read-only: <b>{tenant.id}</b> is owned by the gateway's config file <code>{ownedBy}</code>. Edit it there (a reload applies it),
          or remove the tenant from that file to manage it here. Disable, enable and its keys stay available.
        </div>
      )}
      {error && (
        <div class="notice bad" data-form-error>
          {error}
        </div>
      )}
      <FormToken viewer={viewer} />
      <fieldset disabled={!!ownedBy} class="plain">
        <ScopeBoxes scopes={tenant.scopes} />
        <div class="filters">
          <Field name="budget.daily" label="Daily budget (USD)" value={tenant.budget.daily} placeholder="none" />
          <Field name="budget.monthly" label="Monthly budget (USD)" value={tenant.budget.monthly} placeholder="none" />
          <Field name="budget.total" label="Total budget (USD)" value={tenant.budget.total} placeholder="none" />
          <label>
            On exhaustion
            <select name="onExhausted">
              <option value="block" selected={tenant.onExhausted === "block"}>
                block
              </option>
              <option value="stop" selected={tenant.onExhausted === "stop"}>
                stop (kill switch)
              </option>
            </select>
          </label>
        </div>
        <div class="filters">
          <Field
            name="quotas.requestsPerMinute"
            label="Rate limit (requests/min)"
            value={q.requestsPerMinute}
            placeholder="none"
            type="number"
          />
          <Field name="quotas.maxSandboxes" label="Max sandboxes" value={q.maxSandboxes} placeholder="none" type="number" />
          <Field name="quotas.maxSessions" label="Max sessions" value={q.maxSessions} placeholder="none" type="number" />
          <Field name="quotas.maxTimeoutMinutes" label="Max timeout (min)" value={q.maxTimeoutMinutes} placeholder="none" type="number" />
        </div>
        <div class="filters">
          <Field
            name="alerts.thresholds"
            label="Alert thresholds (% of each budget)"
            value={tenant.alerts.thresholds?.join(", ")}
            placeholder="gateway default"
            width="200px"
          />
          <label>
            Alert webhooks (one URL a line)
            <textarea name="alerts.webhooks" rows={2} cols={48}>
              {(tenant.alerts.webhooks ?? []).join("\n")}
            </textarea>
          </label>
        </div>
        <div class="filters">
          <label>
            Named agent policies, offered at OAuth consent (JSON: name → policy; docs/agent-policies.md)
            <textarea name="agentPolicies" rows={4} cols={72} placeholder='{"docs-only": {"domains": {"allow": ["docs.example.com"]}}}'>
              {tenant.agentPolicies ? JSON.stringify(tenant.agentPolicies, null, 2) : ""}
            </textarea>
          </label>
        </div>
      </fieldset>
      {!ownedBy && (
        <button class="primary" type="submit" data-save>
          Save settings
        </button>
      )}
    </form>
  );
}

export function EnableForm({ tenant, viewer }: { tenant: Tenant; viewer: Viewer }) {
  const verb = tenant.enabled ? "disable" : "enable";
  return (
    <form
      class="inline"
      method="post"
      action={href(`/tenants/${encodeURIComponent(tenant.id)}/${verb}`)}
      {...(tenant.enabled ? { "data-confirm": `Disable ${tenant.id}? Its sandboxes and sessions stop and its tokens are revoked.` } : {})}
    >
      <FormToken viewer={viewer} />
      <button class={tenant.enabled ? "danger" : "primary"} type="submit" data-toggle={verb}>
        {tenant.enabled ? "Disable" : "Enable"}
      </button>
    </form>
  );
}

export function NewTenantForm({ viewer, error }: { viewer: Viewer; error?: string }) {
  return (
    <form method="post" action={href("/tenants")} class="card edit" id="save-form" data-new-tenant>
      <h3>New tenant</h3>
      {error && (
        <div class="notice bad" data-form-error>
          {error}
        </div>
      )}
      <FormToken viewer={viewer} />
      <div class="filters">
        <Field name="id" label="Id" placeholder="e.g. umbrella" width="160px" />
        <Field name="budget.daily" label="Daily budget (USD)" placeholder="none" />
        <Field name="budget.monthly" label="Monthly budget (USD)" placeholder="none" />
        <Field name="quotas.requestsPerMinute" label="Rate limit (requests/min)" placeholder="none" type="number" />
        <Field name="keyLabel" label="First key's label" placeholder="e.g. ci" width="140px" />
      </div>
      <ScopeBoxes scopes={["search", "sessions", "sandboxes", "jobs", "agents"]} />
      <button class="primary" type="submit">
        Create tenant
      </button>
    </form>
  );
}
