/** @jsxImportSource hono/jsx */
// The tables several pages share: ledger entries, live resources (with Stop), a tenant's keys (with Revoke), audit.
import { atomicToUsd } from "../../payments/index.js";
import { keyIdOf, type Tenant } from "../../identity/tenants.js";
import type { AuditEntry, LedgerEntry } from "../../state/types.js";
import { ledgerSurface } from "../../operators/actions/views.js";
import type { LiveResource } from "../resources.js";
import { DangerForm, FormToken, href, managesKeysOf, type Viewer } from "./layout.js";
import { secretChangeDetail, tenantChangeDetail } from "./audit-detail.js";

export const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);
const short = (s: string | undefined, n = 14) => (s && s.length > n ? `${s.slice(0, n)}…` : (s ?? ""));

export function LedgerTable({ entries, showTenant }: { entries: LedgerEntry[]; showTenant: boolean }) {
  if (!entries.length) return <p class="muted">No ledger entries match.</p>;
  return (
    <table data-table="ledger">
      <thead>
        <tr>
          <th>Time (UTC)</th>
          {showTenant && <th>Tenant</th>}
          <th>Route</th>
          <th>Surface</th>
          <th>Kind</th>
          <th>State</th>
          <th class="num">Amount (USD)</th>
          <th>Transaction / resource</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr data-entry={e.id}>
            <td>{when(e.createdAt)}</td>
            {showTenant && <td>{e.tenant}</td>}
            <td>
              <code>{e.route}</code>
            </td>
            <td>{ledgerSurface(e)}</td>
            <td>{e.kind ?? "x402"}</td>
            <td>
              <span class={`pill ${e.state}`}>{e.state}</span>
              {e.reason && (
                <div class="muted" style="font-size:12px">
                  {short(e.reason, 60)}
                </div>
              )}
            </td>
            <td class="num">{atomicToUsd(BigInt(e.amount))}</td>
            <td>
              <code>{e.transaction ? short(e.transaction, 18) : short(e.resource, 30)}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** "3 h 05 min", "12 min", "40 s". */
export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.max(0, Math.floor(seconds))} s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${String(m % 60).padStart(2, "0")} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function ResourceTable({ resources, viewer, showTenant }: { resources: LiveResource[]; viewer: Viewer; showTenant: boolean }) {
  if (!resources.length) return <p class="muted">No sandboxes or sessions.</p>;
  return (
    <table data-table="resources">
      <thead>
        <tr>
          <th>Kind</th>
          <th>Id</th>
          {showTenant && <th>Tenant</th>}
          <th>Status</th>
          <th>Created (UTC)</th>
          <th class="num">Running</th>
          <th class="num">Hold (USD)</th>
          <th>Hold ends (UTC)</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        {resources.map((r) => (
          <tr data-resource={`${r.kind}:${r.id}`}>
            <td>{r.kind}</td>
            <td>
              <code>{r.id}</code>
            </td>
            {showTenant && <td>{r.tenant}</td>}
            <td>
              <span class={`pill ${r.status}`} data-status={r.status}>
                {r.status}
              </span>
            </td>
            <td>{r.createdAt ? r.createdAt.replace("T", " ").slice(0, 19) : ""}</td>
            <td class="num" data-running={r.runningSeconds ?? ""}>
              {r.runningSeconds !== undefined ? duration(r.runningSeconds) : ""}
            </td>
            <td class="num" data-hold={r.hold !== undefined ? atomicToUsd(r.hold) : ""}>
              {r.hold !== undefined ? atomicToUsd(r.hold) : "—"}
            </td>
            <td data-hold-ends>{r.holdEndsAt ? when(r.holdEndsAt) : ""}</td>
            <td>
              {(r.status === "active" || r.status === "unknown") && (viewer.canEdit || viewer.role === "tenant") && (
                <DangerForm
                  viewer={viewer}
                  action={href(`/resources/${r.kind}/${encodeURIComponent(r.id)}/stop`)}
                  confirm={`Stop ${r.kind} ${r.id}?`}
                  label="Stop"
                  mark={{ "data-stop": r.id }}
                />
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Whether a key works now, is in its last day (a rotation's grace), or has expired. */
function keyStatus(expiresAt: string | undefined, now: number): { label: string; cls: string } {
  if (!expiresAt) return { label: "live", cls: "ok" };
  const left = Date.parse(expiresAt) - now;
  if (left <= 0) return { label: "expired", cls: "bad" };
  if (left < 86_400_000) return { label: `expires in ${duration(left / 1000)}`, cls: "warn" };
  return { label: "live", cls: "ok" };
}

const GRACE_CHOICES: Array<[string, string]> = [
  ["0", "stops now"],
  ["3600", "works 1 more hour"],
  ["86400", "works 1 more day"],
  ["604800", "works 7 more days"],
];

export function KeyTable({
  tenant,
  viewer,
  lastUsed,
  now,
}: {
  tenant: Tenant;
  viewer: Viewer;
  lastUsed: Map<string, number>;
  now: number;
}) {
  const manage = managesKeysOf(viewer, tenant.id);
  return (
    <table data-table="keys" data-tenant={tenant.id}>
      <thead>
        <tr>
          <th>Key id</th>
          <th>Label</th>
          <th>Created (UTC)</th>
          <th>Last used (UTC)</th>
          <th>Expires (UTC)</th>
          <th>Status</th>
          {manage && <th></th>}
        </tr>
      </thead>
      <tbody>
        {tenant.keys.map((k) => {
          const id = keyIdOf(k.hash);
          const status = keyStatus(k.expiresAt, now);
          const used = lastUsed.get(k.hash);
          return (
            <tr data-key={id}>
              <td>
                <code>{id}</code>
              </td>
              <td>{k.label ?? ""}</td>
              <td data-created>{k.createdAt ? k.createdAt.replace("T", " ").slice(0, 19) : <span class="muted">before tracking</span>}</td>
              <td data-last-used={used ?? ""}>{used ? when(used) : <span class="muted">never</span>}</td>
              <td>{k.expiresAt ? k.expiresAt.replace("T", " ").slice(0, 19) : "never"}</td>
              <td>
                <span class={`pill ${status.cls}`} data-key-status={status.cls === "bad" ? "expired" : "live"}>
                  {status.label}
                </span>
              </td>
              {manage && (
                <td style="white-space:nowrap">
                  {status.cls !== "bad" && (
                    <form
                      class="inline"
                      method="post"
                      action={href(`/tenants/${encodeURIComponent(tenant.id)}/keys/${id}/rotate`)}
                      data-rotate={id}
                    >
                      <FormToken viewer={viewer} />
                      <span class="muted">old key</span>{" "}
                      <select name="graceSeconds" aria-label="old key">
                        {GRACE_CHOICES.map(([v, l]) => (
                          <option value={v}>{l}</option>
                        ))}
                      </select>{" "}
                      <input type="date" name="expiresAt" aria-label="new key expires" title="new key expires (optional)" />{" "}
                      <button type="submit">Rotate</button>
                    </form>
                  )}{" "}
                  <DangerForm
                    viewer={viewer}
                    action={href(`/tenants/${encodeURIComponent(tenant.id)}/keys/${id}/revoke`)}
                    confirm={`Revoke key ${id} of ${tenant.id}?`}
                    label="Revoke"
                    mark={{ "data-revoke": id }}
                  />
                </td>
              )}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

export function NewKeyForm({ tenant, viewer }: { tenant: string; viewer: Viewer }) {
  return (
    <form class="filters" method="post" action={href(`/tenants/${encodeURIComponent(tenant)}/keys`)} data-create-key={tenant}>
      <FormToken viewer={viewer} />
      <label>
        New key label
        <input name="label" maxlength={200} placeholder="e.g. ci" />
      </label>
      <label>
        Expires (optional)
        <input name="expiresAt" type="date" />
      </label>
      <button class="primary" type="submit">
        Create key
      </button>
    </form>
  );
}

/** A tenant sees who acted on it as "admin", not the admin tenant's id. */
const actorAs = (actor: string, viewer?: Viewer) =>
  !viewer || viewer.admin || actor === viewer.tenant || actor === viewer.actor || actor === "system" ? actor : "admin";

export function AuditTable({ entries, viewer }: { entries: AuditEntry[]; viewer?: Viewer }) {
  if (!entries.length) return <p class="muted">Nothing recorded.</p>;
  return (
    <table data-table="audit">
      <thead>
        <tr>
          <th>Time (UTC)</th>
          <th>Actor</th>
          <th>Action</th>
          <th>Target</th>
          <th>Detail</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr data-seq={e.seq}>
            <td>{when(e.at)}</td>
            <td>{actorAs(e.actor, viewer)}</td>
            <td>
              <code>{e.action}</code>
            </td>
            <td>
              <code>{e.target}</code>
            </td>
            <td class="muted">{auditDetail(e)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The grace a rotation gave the old key, from the key as the entry's `after` holds it (gone: it stopped at once). */
function rotationDetail(e: AuditEntry): string {
  type Keys = { keys?: Array<{ id: string; expiresAt?: string }> };
  const keyId = e.target.slice(e.target.lastIndexOf("/") + 1);
  const old = (e.after as Keys | undefined)?.keys?.find((k) => k.id === keyId);
  if (!old?.expiresAt) return "old key stopped at once (no grace)";
  const before = (e.before as Keys | undefined)?.keys?.find((k) => k.id === keyId);
  if (before?.expiresAt === old.expiresAt) return `old key until its own expiry, ${old.expiresAt}`;
  const seconds = Math.max(0, Math.round((Date.parse(old.expiresAt) - e.at) / 1000));
  const grace =
    seconds % 86_400 === 0 && seconds
      ? `${seconds / 86_400} d`
      : seconds % 3600 === 0 && seconds
        ? `${seconds / 3600} h`
        : seconds % 60 === 0 && seconds
          ? `${seconds / 60} min`
          : `${seconds} s`;
  return `old key kept ${grace} more, until ${old.expiresAt}`;
}

/** A line about what an alert or a kill did, from the figures the entry recorded (never its before/after as a whole). */
function auditDetail(e: AuditEntry): string {
  const a = (e.after ?? {}) as Record<string, unknown>;
  if (e.action === "alert.budget.threshold") return `${a.window} ${a.period}: crossed ${a.threshold}% ($${a.spent} of $${a.limit})`;
  if (e.action === "alert.budget.exhausted") return `${a.window} ${a.period}: exhausted (then ${a.onExhausted})`;
  if (e.action === "resource.stop") return `stopped (upstream ${a.status})`;
  if (e.action === "console.login") return `signed in with ${a.via}`;
  if (e.action === "key.rotate") return rotationDetail(e);
  // What a tenant change changed (issue 54): each field, old → new; keys and secrets named, never shown.
  if (/^(config\.)?tenant\.(update|scopes|budget|payment|quotas|policy|agentPolicies|alerts)$/.test(e.action))
    return tenantChangeDetail(e.before, e.after);
  // A secret's change (issue 57): its name and each rule old → new; the value is in no entry.
  if (e.action.startsWith("secret.")) return secretChangeDetail(e.action, e.target, e.before, e.after);
  if (e.action === "tenant.kill") {
    const stopped = (a.stopped ?? {}) as { sandboxes?: unknown[]; sessions?: unknown[] };
    return `${a.reason}: stopped ${stopped.sandboxes?.length ?? 0} sandboxes, ${stopped.sessions?.length ?? 0} sessions`;
  }
  return "";
}
