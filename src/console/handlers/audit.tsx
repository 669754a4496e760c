/** @jsxImportSource hono/jsx */
// The console's audit log and alerts: the alerts raised for the visible tenants, and the log filtered and paged
// through ../../operators/actions/views.ts as the admin API's audit view is.
import type { GatewayServices } from "../../services.js";
import { auditPage, concernsTenant } from "../../operators/actions/views.js";
import { AuditPage } from "../pages/audit.js";
import { AUDIT_SCAN, DAY, type Pages, render, visibleTenants } from "../kit.js";

export function auditPages(services: GatewayServices): Pages {
  return {
    "console.audit": async (c) => {
      const viewer = c.get("viewer");
      const q = c.req.query();
      const before = /^\d+$/.test(q.before ?? "") ? Number(q.before) : undefined;
      const filters = {
        action: q.action?.trim().slice(0, 100) || undefined,
        actor: viewer.admin ? q.actor?.trim().slice(0, 100) || undefined : undefined,
        since: DAY.test(q.since ?? "") ? q.since : undefined,
        until: DAY.test(q.until ?? "") ? q.until : undefined,
      };
      const scanned = await services.stores.audit.list({ limit: AUDIT_SCAN });
      const mine = viewer.admin ? scanned : scanned.filter((e) => concernsTenant(e.target, viewer.tenant));
      const alerts = mine.filter((e) => e.action.startsWith("alert.")).slice(0, 50);
      const page = await auditPage(
        services,
        {
          action: filters.action,
          actor: filters.actor,
          target: viewer.admin ? undefined : `tenant:${viewer.tenant}`,
          since: filters.since ? Date.parse(filters.since) : undefined,
          until: filters.until ? Date.parse(filters.until) + 86_400_000 : undefined,
        },
        50,
        before,
      );
      return render(
        c,
        <AuditPage
          viewer={viewer}
          nonce={c.get("nonce")}
          tenants={visibleTenants(services, c)}
          thresholds={services.config.alerts.thresholds}
          globalWebhooks={services.config.alerts.webhooks}
          alerts={alerts}
          entries={page.entries.filter((e) => !e.action.startsWith("alert.") || filters.action)}
          next={page.next ?? undefined}
          filters={filters}
        />,
      );
    },
  };
}
