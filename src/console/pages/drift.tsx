/** @jsxImportSource hono/jsx */
// Config drift (docs/config-as-code.md): what the fleet's tenants say against the file last applied (or, before any
// apply, the gateway's own config file) — the admin API and console edits made since, field by field. Keys by id.
import type { ConfigDrift } from "../../operators/actions/config-state.js";
import { Page, type Viewer } from "./layout.js";

const WHAT = {
  create: "in the file, not on the fleet: an apply creates it",
  update: "differs from the file: an apply sets these back",
  delete: "not in the file: an apply with --prune deletes it",
  refused: "in the file, but deleted on the fleet",
} as const;

export function DriftPage(props: { viewer: Viewer; nonce: string; drift: ConfigDrift }) {
  const { drift } = props;
  const t = drift.sections.tenants;
  const against = drift.against;
  return (
    <Page title="Config drift" viewer={props.viewer} active="/config" nonce={props.nonce}>
      <h1>Config drift</h1>
      <p data-against={against.kind}>
        Compared with{" "}
        {against.kind === "last-apply" ? (
          <>
            the file last applied, {against.at} by <code>{against.by}</code>
            {against.origin ? `, from the ${against.origin}` : ""}
          </>
        ) : (
          "the gateway's own config file (no file has been applied yet)"
        )}
        .
      </p>
      <p data-drift={drift.inSync ? "in-sync" : "drift"}>
        {drift.inSync ? (
          <strong>In sync: the fleet matches the file for every tenant it names.</strong>
        ) : (
          <strong>
            {t.changes.length} tenant{t.changes.length === 1 ? "" : "s"} drifted from the file.
          </strong>
        )}{" "}
        {t.unchanged} unchanged.
      </p>
      {t.changes.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Tenant</th>
              <th>State</th>
              <th>Fields</th>
            </tr>
          </thead>
          <tbody>
            {t.changes.map((c) => (
              <tr data-drift-tenant={c.id} data-action={c.action}>
                <td>
                  <code>{c.id}</code>
                </td>
                <td>{WHAT[c.action]}</td>
                <td>{c.fields?.join(", ") ?? c.reason ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {t.notInFile.length > 0 && (
        <p class="muted" data-not-in-file={t.notInFile.length}>
          Not named by the file (left alone; <code>tollgate apply --prune</code> deletes them): {t.notInFile.join(", ")}
        </p>
      )}
      <p class="muted">
        The file is the truth for what it names: <code>tollgate apply FILE</code> puts these back; to keep an edit, take it into the file
        with <code>tollgate export</code>. Edits made here and through the admin API hold until the next apply or reload.
      </p>
    </Page>
  );
}
