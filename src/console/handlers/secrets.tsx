/** @jsxImportSource hono/jsx */
// The console's Secrets page (issue 57): a tenant's secrets listed with their rules and last use; add or replace one and
// delete one through ../../operators/actions/secrets.ts, as the secrets' API rows do (same schema, same audit entries).
// A tenant manages its own; an admin any tenant's; a read-only operator reads. A refused form comes back with each
// field's error beside it and every field refilled but the value, which no page or answer ever holds.
import type { Context } from "hono";
import type { GatewayEnv } from "../../context.js";
import { floorLiveSandboxes } from "../../sandboxes/secret-env.js";
import type { GatewayServices } from "../../services.js";
import { GatewayError } from "../../errors.js";
import { deleteSecret, putSecret } from "../../operators/actions/secrets.js";
import { SECRET_NAME, secretPutBody } from "../../routing/admin-schemas.js";
import { href, managesKeysOf } from "../pages/layout.js";
import { type SecretFormField, type SecretFormState, SecretsPage } from "../pages/secrets.js";
import { actor, type C, field, fields, formOf, type Pages, param, render, visibleTenant, visibleTenants } from "../kit.js";

const FORM_FIELDS: readonly SecretFormField[] = [
  "name",
  "value",
  "hosts",
  "methods",
  "paths",
  "header",
  "format",
  "sandboxes",
  "images",
  "snapshots",
];

/** A comma- or blank-separated list field. */
const listOf = (s: string) => s.split(/[\s,]+/).filter(Boolean);

export function secretPages(services: GatewayServices): Pages {
  /** The tenant whose secrets the viewer may change (an admin any, a tenant its own), or 404/403. */
  const managedTenant = (c: C): string => {
    const t = visibleTenant(services, c, param(c, "id"));
    if (!managesKeysOf(c.get("viewer"), t.id))
      throw new GatewayError(403, "missing_scope", "Only an admin key, or the tenant itself, can change its secrets.");
    return t.id;
  };

  async function secretsPage(
    c: C,
    chosen: string | undefined,
    extra: { notice?: string; form?: SecretFormState } = {},
    status: 200 | 400 = 200,
  ) {
    const viewer = c.get("viewer");
    const visible = visibleTenants(services, c).map((t) => t.id);
    const tenant = viewer.admin ? (chosen && visible.includes(chosen) ? chosen : undefined) : viewer.tenant;
    const secrets = tenant ? (await services.vault.list(tenant)).sort((a, b) => a.name.localeCompare(b.name)) : [];
    return render(
      c,
      <SecretsPage
        viewer={viewer}
        nonce={c.get("nonce")}
        tenants={visible}
        tenant={tenant}
        secrets={secrets}
        manage={!!tenant && managesKeysOf(viewer, tenant)}
        {...extra}
      />,
      status,
    );
  }

  return {
    "console.secrets": (c) => {
      const saved = c.req.query("saved");
      const deleted = c.req.query("deleted");
      const notice =
        saved && SECRET_NAME.test(saved)
          ? `Saved secret ${saved}: it applies from its next use, on every instance.`
          : deleted && SECRET_NAME.test(deleted)
            ? `Deleted secret ${deleted}: its placeholders are refused from now on.`
            : undefined;
      return secretsPage(c, c.req.query("tenant"), { notice });
    },

    "console.secrets.put": async (c) => {
      const tenant = managedTenant(c);
      const form = await formOf(c);
      const name = field(form, "name");
      const refill: SecretFormState = {
        name,
        hosts: field(form, "hosts"),
        methods: fields(form, "methods"),
        paths: field(form, "paths"),
        header: field(form, "header"),
        format: field(form, "format"),
        sandboxes: field(form, "sandboxes"),
        images: field(form, "images"),
        snapshots: field(form, "snapshots"),
      };
      const errors: Partial<Record<SecretFormField, string>> = {};
      if (!SECRET_NAME.test(name))
        errors.name = name
          ? "An environment variable's name: letters, digits and _, not starting with a digit, at most 64."
          : "Name the secret.";
      const hosts = listOf(refill.hosts ?? "");
      const paths = listOf(refill.paths ?? "");
      const images = listOf(refill.images ?? "");
      const snapshots = listOf(refill.snapshots ?? "");
      const parsed = secretPutBody.safeParse({
        value: field(form, "value"),
        hosts,
        ...(refill.methods?.length ? { methods: refill.methods } : {}),
        ...(paths.length ? { paths } : {}),
        ...(refill.header ? { header: refill.header } : {}),
        ...(refill.format ? { format: refill.format } : {}),
        ...(refill.sandboxes ? { sandboxes: refill.sandboxes } : {}),
        ...(images.length ? { images } : {}),
        ...(snapshots.length ? { snapshots } : {}),
      });
      if (!parsed.success)
        for (const issue of parsed.error.issues) {
          const [key, index] = issue.path;
          const at = FORM_FIELDS.find((f) => f === key) ?? "name";
          // A host or path is named by what was typed (never the value: its messages say only what is wrong).
          const typed =
            at === "hosts" && typeof index === "number"
              ? `"${hosts[index]}": `
              : at === "paths" && typeof index === "number"
                ? `"${paths[index]}": `
                : (at === "images" || at === "snapshots") && typeof index === "number"
                  ? `"${(at === "images" ? images : snapshots)[index]}": `
                  : "";
          errors[at] ??= `${typed}${issue.message}`;
        }
      if (!parsed.success || Object.keys(errors).length) return secretsPage(c, tenant, { form: { ...refill, errors } }, 400);
      const { hostsAdded } = await putSecret(services, actor(c), tenant, name, parsed.data);
      // The console's pages run on the gateway's own app: its context is the gateway's, typed for the pages.
      if (hostsAdded) services.background(c, floorLiveSandboxes(services, c as unknown as Context<GatewayEnv>, tenant), "egress floor");
      return c.redirect(href(`/secrets?tenant=${encodeURIComponent(tenant)}&saved=${name}`), 303);
    },

    "console.secrets.delete": async (c) => {
      const tenant = managedTenant(c);
      const name = param(c, "name");
      if (!SECRET_NAME.test(name) || !(await deleteSecret(services, actor(c), tenant, name)))
        throw new GatewayError(404, "not_found", `${tenant} has no secret ${name}.`);
      return c.redirect(href(`/secrets?tenant=${encodeURIComponent(tenant)}&deleted=${name}`), 303);
    },
  };
}
