/** @jsxImportSource hono/jsx */
// The console's tenant page: its spend, live resources, ledger, audit trail and keys' last use; an admin changes its
// settings and enables or disables it (../../operators/actions/tenants.ts, as the admin API does).
import type { GatewayServices } from "../../services.js";
import type { Tenant } from "../../identity/tenants.js";
import { GatewayError } from "../../errors.js";
import { lastUsed } from "../../identity/key-usage.js";
import { patchTenant, setTenantEnabled } from "../../operators/actions/tenants.js";
import { fileOwner } from "../../operators/actions/tenant-changes.js";
import { fleetSavings } from "../../operators/actions/savings.js";
import { concernsTenant } from "../../operators/actions/views.js";
import { tenantPatchBody } from "../../routing/admin-schemas.js";
import { liveResources } from "../resources.js";
import { spendHistory, tenantSpend } from "../spend.js";
import { href } from "../pages/layout.js";
import { TenantPage } from "../pages/tenant.js";
import {
  actor,
  AUDIT_SCAN,
  type C,
  field,
  fields,
  formOf,
  formValue,
  numberField,
  type Pages,
  param,
  render,
  requireAdmin,
  visibleTenant,
  withoutUndefined,
} from "../kit.js";

export function tenantPages(services: GatewayServices): Pages {
  const { stores } = services;

  async function tenantPage(c: C, tenant: Tenant, extra: { notice?: string; formError?: string } = {}, status: 200 | 400 | 409 = 200) {
    const [spend, resources, ledger, auditLog, savings, history, used] = await Promise.all([
      tenantSpend(services, tenant),
      liveResources(services, [tenant.id]),
      stores.ledger.list({ tenant: tenant.id, limit: 10 }),
      stores.audit.list({ limit: AUDIT_SCAN }),
      fleetSavings(services, [tenant.id]),
      spendHistory(services, [tenant.id], tenant.id),
      lastUsed(
        services,
        tenant.keys.map((k) => k.hash),
      ),
    ]);
    const own = auditLog.filter((e) => concernsTenant(e.target, tenant.id)).slice(0, 20);
    return render(
      c,
      <TenantPage
        viewer={c.get("viewer")}
        nonce={c.get("nonce")}
        spend={spend}
        savings={savings}
        thresholds={services.config.alerts.thresholds}
        resources={resources}
        ledger={ledger}
        audit={own}
        history={history}
        lastUsed={used}
        now={services.now()}
        ownedBy={fileOwner(services, tenant.id)?.file}
        {...extra}
      />,
      status,
    );
  }

  return {
    "console.tenant": async (c) => {
      const tenant = visibleTenant(services, c, param(c, "id"));
      const saved = c.req.query("saved");
      const notice =
        saved === "settings"
          ? "Settings saved."
          : saved === "enable"
            ? "Tenant enabled."
            : saved === "disable"
              ? "Tenant disabled."
              : undefined;
      return tenantPage(c, tenant, { notice });
    },

    "console.tenant.settings": async (c) => {
      requireAdmin(c);
      const tenant = visibleTenant(services, c, param(c, "id"));
      const form = await formOf(c);
      const thresholds = field(form, "alerts.thresholds");
      const webhooks = field(form, "alerts.webhooks")
        .split(/\r?\n/)
        .map((s) => s.trim())
        .filter(Boolean);
      const patch = {
        scopes: fields(form, "scopes"),
        budget: withoutUndefined({
          daily: field(form, "budget.daily"),
          monthly: field(form, "budget.monthly"),
          total: field(form, "budget.total"),
        }),
        // Quotas the form does not show (images, regions) are kept as they are.
        quotas: withoutUndefined({
          ...tenant.quotas,
          requestsPerMinute: numberField(form, "quotas.requestsPerMinute"),
          maxSandboxes: numberField(form, "quotas.maxSandboxes"),
          maxSessions: numberField(form, "quotas.maxSessions"),
          maxTimeoutMinutes: numberField(form, "quotas.maxTimeoutMinutes"),
        }),
        onExhausted: field(form, "onExhausted"),
        alerts: withoutUndefined({
          thresholds: thresholds
            ? thresholds
                .split(/[\s,]+/)
                .filter(Boolean)
                .map((t) => (/^\d+(\.\d+)?$/.test(t) ? Number(t) : t))
            : undefined,
          webhooks: webhooks.length ? webhooks : undefined,
        }),
      };
      try {
        // Named agent policies as JSON; left empty on a tenant that has none, nothing changes (a Save edits no more).
        const policies = field(form, "agentPolicies");
        if (policies || tenant.agentPolicies) {
          try {
            Object.assign(patch, { agentPolicies: policies ? JSON.parse(policies) : {} });
          } catch (err) {
            throw new GatewayError(400, "invalid_form", `agentPolicies: not JSON (${(err as Error).message})`);
          }
        }
        await patchTenant(services, actor(c), tenant.id, formValue(tenantPatchBody, patch));
      } catch (err) {
        if (err instanceof GatewayError && (err.status === 400 || err.status === 409))
          return tenantPage(c, tenant, { formError: err.message }, err.status);
        throw err;
      }
      return c.redirect(href(`/tenants/${encodeURIComponent(tenant.id)}?saved=settings`), 303);
    },

    "console.tenant.enabled": async (c) => {
      requireAdmin(c);
      const tenant = visibleTenant(services, c, param(c, "id"));
      const verb = c.req.path.endsWith("/enable") ? "enable" : "disable";
      await setTenantEnabled(services, actor(c), tenant.id, verb === "enable");
      return c.redirect(href(`/tenants/${encodeURIComponent(tenant.id)}?saved=${verb}`), 303);
    },
  };
}
