/** @jsxImportSource hono/jsx */
// The frame of every console page: head, navigation, who is signed in, and the sign-out form.
import type { Child } from "hono/jsx";
import { raw } from "hono/html";
import { Document } from "../../pages/document.js";
import { CONSOLE_PATH } from "../../identity/console-session.js";
import type { OperatorRole } from "../../identity/roles.js";

/**
 * Who is looking: the tenant signed in, its role, and the form token of its session. `admin` is true for both operator
 * roles (every tenant is visible); `canEdit` only for the admin role (operator-readonly changes nothing).
 */
export interface Viewer {
  tenant: string;
  role: OperatorRole;
  admin: boolean;
  canEdit: boolean;
  csrf: string;
  /** A person signed in through the identity provider: their email or name (or subject), and their audit actor. */
  who?: string;
  actor?: string;
  /** Operators only: what is wrong with the gateway itself (a failed config reload, a rejected upstream key), on every page. */
  warnings?: string[];
}

const NAV: Array<[string, string, OperatorRole[]]> = [
  ["", "Overview", ["admin", "readonly", "tenant"]],
  ["/ledger", "Ledger", ["admin", "readonly", "tenant"]],
  ["/resources", "Sandboxes & sessions", ["admin", "readonly", "tenant"]],
  ["/requests", "Requests", ["admin", "readonly", "tenant"]],
  ["/keys", "Keys", ["admin", "readonly", "tenant"]],
  ["/tokens", "Keyless tokens", ["tenant"]],
  ["/secrets", "Secrets", ["admin", "readonly", "tenant"]],
  ["/grants", "Agent grants", ["admin", "readonly", "tenant"]],
  ["/audit", "Audit & alerts", ["admin", "readonly", "tenant"]],
  ["/config", "Config drift", ["admin", "readonly"]],
  ["/sales", "Sales", ["admin", "readonly"]],
];
const ROLE_LABEL: Record<OperatorRole, string> = { admin: "admin", readonly: "read-only operator", tenant: "tenant" };

/** Whether the viewer may manage this tenant's keys: an admin any tenant's, a tenant its own. */
export const managesKeysOf = (viewer: Viewer, tenant: string) => viewer.canEdit || (viewer.role === "tenant" && viewer.tenant === tenant);

export const href = (path: string) => `${CONSOLE_PATH}${path}`;

/** A form's hidden CSRF field. */
export const FormToken = ({ viewer }: { viewer: Viewer }) => <input type="hidden" name="_csrf" value={viewer.csrf} />;

/** A one-button POST form the console's script confirms before sending (stop, revoke): `mark` names the button for tests. */
export const DangerForm = (props: { viewer: Viewer; action: string; confirm: string; label: string; mark: Record<string, string> }) => (
  <form class="inline" method="post" action={props.action} data-confirm={props.confirm}>
    <FormToken viewer={props.viewer} />
    <button class="danger" type="submit" {...props.mark}>
      {props.label}
    </button>
  </form>
);

/** Who is signed in, on one line: a long label is cut with an ellipsis (the style sheet) and read whole in its title. */
function Who({ viewer }: { viewer: Viewer }) {
  const name = viewer.who ? (viewer.role === "tenant" ? `${viewer.who} · ${viewer.tenant}` : viewer.who) : viewer.tenant;
  const label = `${name} (${ROLE_LABEL[viewer.role]})`;
  return (
    <span class="who" data-role={viewer.role} title={label}>
      {label}
    </span>
  );
}

export function Page(props: { title: string; viewer?: Viewer; active?: string; nonce: string; children?: Child }) {
  const { viewer } = props;
  return (
    <Document
      title={`${props.title} · Tollgate console`}
      nonce={props.nonce}
      viewport
      header={
        <>
          {viewer && (
            <nav>
              {NAV.filter(([, , roles]) => roles.includes(viewer.role)).map(([path, label]) => (
                <a href={href(path)} class={props.active === path ? "on" : ""}>
                  {label}
                </a>
              ))}
            </nav>
          )}
          {viewer && <Who viewer={viewer} />}
          {viewer && (
            <form method="post" action={href("/logout")}>
              <FormToken viewer={viewer} />
              <button type="submit">Sign out</button>
            </form>
          )}
        </>
      }
      after={<script nonce={props.nonce}>{raw(CLIENT_SCRIPT)}</script>}
    >
      {viewer?.warnings?.map((w) => (
        <div class="notice bad" role="alert" data-gateway-warning>
          {w}
        </div>
      ))}
      {props.children}
    </Document>
  );
}

/** The only client script: ask before destructive buttons, and copy a newly shown key. */
const CLIENT_SCRIPT = `
document.addEventListener("submit", function (e) {
  var q = e.target.getAttribute("data-confirm");
  if (q && !window.confirm(q)) e.preventDefault();
});
document.addEventListener("click", function (e) {
  var id = e.target.getAttribute && e.target.getAttribute("data-copy");
  if (!id) return;
  var el = document.getElementById(id);
  if (el && navigator.clipboard) navigator.clipboard.writeText(el.textContent.trim()).then(function () { e.target.textContent = "Copied"; });
});
`;

export function ErrorPage(props: { status: number; message: string; viewer?: Viewer; nonce: string }) {
  return (
    <Page title="Error" viewer={props.viewer} nonce={props.nonce}>
      <h1>{props.status === 404 ? "Not found" : props.status === 403 ? "Refused" : "Something went wrong"}</h1>
      <div class="notice bad">{props.message}</div>
      <p>
        <a href={href("")}>Back to the overview</a>
      </p>
    </Page>
  );
}
