/** @jsxImportSource hono/jsx */
// The agents a tenant let in with OAuth (src/oauth/): each grant with its client, scopes, cap and what was spent under
// it, its last use and expiry, and a button that revokes it (its open MCP sessions and refreshes end at once).
import { DangerForm, href, Page, type Viewer } from "./layout.js";

/** A grant as the console shows it (src/oauth/grants.ts grantView). */
export interface GrantRow {
  id: string;
  tenant: string;
  state: string;
  client: { id: string; name: string; redirectHost: string };
  scopes: string[];
  cap: string;
  window: string;
  spent: string;
  spentTotal: string;
  expiresAt: string;
  lastUsedAt: string;
  revokedReason?: string;
  /** Who consented: a person of the identity provider (`oidc:<sub>`), or a tenant key (its id). */
  consentedBy?: { person?: string; key?: string };
}

const WINDOW_LABEL: Record<string, string> = { daily: "per day", monthly: "per month", total: "in all" };
const day = (iso: string) => iso.replace("T", " ").slice(0, 16);

export function GrantsPage(props: {
  viewer: Viewer;
  nonce: string;
  grants: GrantRow[];
  notice?: string;
  canRevoke: (g: GrantRow) => boolean;
}) {
  const { viewer } = props;
  return (
    <Page title="Agent grants" viewer={viewer} active="/grants" nonce={props.nonce}>
      <h1>Agent grants</h1>
      <p class="muted">
        Agents (Claude, Cursor, mcp-remote…) connected with OAuth. Each grant holds the scopes, the spend cap and the expiry chosen on its
        consent page; revoking one ends its open sessions and refreshes at once.
      </p>
      {props.notice && <div class="notice">{props.notice}</div>}
      {props.grants.length ? (
        <table data-table="grants">
          <thead>
            <tr>
              {viewer.admin && <th>Tenant</th>}
              <th>Client</th>
              <th>Scopes</th>
              <th>Cap</th>
              <th>Spent</th>
              <th>Last use (UTC)</th>
              <th>Expires (UTC)</th>
              <th>State</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            {props.grants.map((g) => (
              <tr data-grant={g.id}>
                {viewer.admin && <td>{g.tenant}</td>}
                <td>
                  <strong>{g.client.name}</strong>
                  <br />
                  <span class="muted">→ {g.client.redirectHost}</span>
                  {g.consentedBy?.person && (
                    <>
                      <br />
                      <span class="muted" data-consented-by={g.consentedBy.person}>
                        by {g.consentedBy.person}
                      </span>
                    </>
                  )}
                </td>
                <td>{g.scopes.join(", ")}</td>
                <td>
                  ${g.cap} {WINDOW_LABEL[g.window] ?? g.window}
                </td>
                <td>
                  ${g.spent}
                  {g.window !== "total" && <span class="muted"> (${g.spentTotal} in all)</span>}
                </td>
                <td>{day(g.lastUsedAt)}</td>
                <td>{day(g.expiresAt)}</td>
                <td data-state={g.state}>{g.revokedReason ? `${g.state}: ${g.revokedReason}` : g.state}</td>
                <td>
                  {g.state === "active" && props.canRevoke(g) && (
                    <DangerForm
                      viewer={viewer}
                      action={href(`/grants/${encodeURIComponent(g.id)}/revoke`)}
                      confirm={`Revoke ${g.client.name}'s access?`}
                      label="Revoke"
                      mark={{ "data-revoke-grant": g.id }}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No agent has connected with OAuth yet.</p>
      )}
    </Page>
  );
}
