/** @jsxImportSource hono/jsx */
// The consent page: who is asking (the client's name and where its answer goes), the tenant's sign-in (a key or a
// one-time console link), and what the grant allows: scopes, a spend cap with its window, and an expiry.
import { Document, scriptlessPage } from "../pages/document.js";

export interface ConsentView {
  request: string;
  csrf: string;
  clientName: string;
  clientId: string;
  /** Whether the name comes from a metadata document fetched from the client's own URL (its host vouches for it). */
  verifiedHost?: string;
  redirectHost: string;
  scopes: string[];
  /** The tools each scope offers (the tenant may narrow the grant to some). */
  tools: Record<string, string[]>;
  defaultDays: number;
  maxDays: number;
  message?: string;
  /** The operators' identity provider, when one is configured: its name on the "Sign in with" button. */
  provider?: string;
  /** Signed in through the provider (a consent ticket, ./oidc-consent.ts): the tenant and who. */
  signedIn?: { ticket: string; tenant: string; who: string };
  /** What was typed before a refused post (never the credential). */
  chosen?: { scopes: string[]; tools: string[]; toolsShown: boolean; cap: string; window: string; days: string; agentPolicy?: string };
  /** The signed-in tenant's named agent policies (`tenants[].agentPolicies`), offered as a choice; unknown before sign-in. */
  agentPolicies?: string[];
}

const SCOPE_TEXT: Record<string, string> = {
  search: "Web search and fetch (paid per call)",
  jobs: "Scrape, crawl and extract jobs",
  agents: "Browser agent tasks",
  sessions: "Browser sessions",
  sandboxes: "Sandboxes: run commands, read and write files",
};

/** Room between the form's fields (the console's style sheet is made for tables and filters). */
const CONSENT_CSS = `
fieldset { margin: 0 0 14px; padding: 10px 14px; }
fieldset label { margin-right: 12px; }
.scope { margin: 6px 0; }
.tools { margin: 2px 0 0 24px; }
.tools label { margin-right: 10px; }
`;

/** A consent or error page as a response (they run no script: the kit's scriptless page). */
export const oauthHtml = scriptlessPage;

export function ConsentPage(v: ConsentView) {
  const chosen = v.chosen;
  const checked = (s: string) => (chosen ? chosen.scopes.includes(s) : true);
  const toolChecked = (t: string) => (chosen?.toolsShown ? chosen.tools.includes(t) : true);
  const window = chosen?.window ?? "total";
  return (
    <Document title={`Allow ${v.clientName} · Tollgate`} css={CONSENT_CSS} viewport>
      <h1>Allow {v.clientName} to act for a tenant?</h1>
      <p>
        <strong>{v.clientName}</strong> asks for access to this gateway's MCP endpoint. Its answer goes to <strong>{v.redirectHost}</strong>
        .{v.verifiedHost ? ` Its description comes from ${v.verifiedHost}.` : " It registered itself; its name is its own claim."}
      </p>
      <p class="muted">Client: {v.clientId}</p>
      {v.message && (
        <p class="error" role="alert">
          {v.message}
        </p>
      )}
      <form method="post" action="/authorize">
        <input type="hidden" name="request" value={v.request} />
        <input type="hidden" name="_csrf" value={v.csrf} />
        <fieldset>
          <legend>Sign in</legend>
          {v.signedIn ? (
            <p>
              <input type="hidden" name="ticket" value={v.signedIn.ticket} />
              Signed in as <strong>{v.signedIn.who}</strong> for tenant <strong>{v.signedIn.tenant}</strong>.
            </p>
          ) : (
            <>
              <label>
                Tenant key or one-time console link
                <input type="password" name="credential" autocomplete="off" required />
              </label>
              {v.provider && (
                <p>
                  or{" "}
                  <a class="button" href={`/authorize?${new URLSearchParams({ request: v.request, signin: "oidc" })}`}>
                    Sign in with {v.provider}
                  </a>
                </p>
              )}
            </>
          )}
        </fieldset>
        <fieldset>
          <legend>What it may do</legend>
          <p class="muted">Only scopes the tenant has can be granted; untick a tool to keep it from the agent.</p>
          <input type="hidden" name="tools_shown" value="1" />
          {v.scopes.map((s) => (
            <div class="scope">
              <label>
                <input type="checkbox" name="scope" value={s} checked={checked(s)} /> {SCOPE_TEXT[s] ?? s} ({s})
              </label>
              {(v.tools[s] ?? []).length > 0 && (
                <div class="tools muted">
                  Tools:{" "}
                  {(v.tools[s] ?? []).map((t) => (
                    <label>
                      <input type="checkbox" name="tool" value={t} checked={toolChecked(t)} /> <code>{t}</code>{" "}
                    </label>
                  ))}
                </div>
              )}
            </div>
          ))}
        </fieldset>
        <fieldset>
          <legend>Agent policy</legend>
          {v.agentPolicies ? (
            <label>
              Policy
              <select name="agent_policy">
                <option value="" selected={!chosen?.agentPolicy}>
                  the tenant's own policy only
                </option>
                {v.agentPolicies.map((n) => (
                  <option value={n} selected={chosen?.agentPolicy === n}>
                    {n}
                  </option>
                ))}
              </select>
            </label>
          ) : (
            <label>
              Name of one of the tenant's agent policies
              <input type="text" name="agent_policy" autocomplete="off" placeholder="none" value={chosen?.agentPolicy ?? ""} />
            </label>
          )}
          <p class="muted">
            The agent may do only what the chosen policy allows (sites, images, lifetimes, egress), within the tenant's own policy.
          </p>
        </fieldset>
        <fieldset>
          <legend>Spend cap</legend>
          <label>
            At most (USD)
            <input type="text" name="cap" inputmode="decimal" placeholder="5.00" value={chosen?.cap ?? ""} required />
          </label>
          <label>
            per
            <select name="window">
              <option value="daily" selected={window === "daily"}>
                day
              </option>
              <option value="monthly" selected={window === "monthly"}>
                month
              </option>
              <option value="total" selected={window === "total"}>
                the grant's whole life
              </option>
            </select>
          </label>
          <p class="muted">Spending stops at the cap; the tenant's own budget applies as well.</p>
        </fieldset>
        <fieldset>
          <legend>Expiry</legend>
          <label>
            Days until it ends
            <input type="number" name="days" min="1" max={String(v.maxDays)} value={chosen?.days ?? String(v.defaultDays)} required />
          </label>
          <p class="muted">You can revoke it at any time in the console or through the admin API.</p>
        </fieldset>
        <button class="primary" type="submit" name="action" value="allow">
          Allow
        </button>{" "}
        <button type="submit" name="action" value="deny" formnovalidate>
          Deny
        </button>
      </form>
    </Document>
  );
}

export function OAuthErrorPage(props: { title: string; message: string }) {
  return (
    <Document title={`${props.title} · Tollgate`}>
      <h1>{props.title}</h1>
      <p class="error">{props.message}</p>
    </Document>
  );
}
