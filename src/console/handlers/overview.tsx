/** @jsxImportSource hono/jsx */
// The console's overview: every visible tenant's spend against its budget, live sandboxes and sessions, savings and
// the spend history; an admin creates a tenant from it (../../operators/actions/tenants.ts, as the admin API does).
import type { GatewayServices } from "../../services.js";
import { GatewayError } from "../../errors.js";
import { createTenant } from "../../operators/actions/tenants.js";
import { fleetSavings } from "../../operators/actions/savings.js";
import { tenantCreateBody } from "../../routing/admin-schemas.js";
import { spendHistory, tenantSpend } from "../spend.js";
import { OverviewPage, type AccountRow } from "../pages/overview.js";
import { atomicToUsd, settledCostSoFar } from "../../payments/index.js";
import {
  actor,
  type C,
  field,
  fields,
  formOf,
  formValue,
  numberField,
  type Pages,
  render,
  requireAdmin,
  visibleTenants,
  withoutUndefined,
} from "../kit.js";

export function overviewPages(services: GatewayServices): Pages {
  const { stores } = services;

  async function overview(
    c: C,
    extra: { issued?: { tenant: string; id: string; key: string }; formError?: string } = {},
    status: 200 | 201 | 400 | 409 = 200,
  ) {
    const tenants = visibleTenants(services, c);
    const viewer = c.get("viewer");
    const spends = await Promise.all(
      tenants
        .filter((t) => !viewer.admin || !t.scopes.includes("admin") || t.budget.daily || t.budget.monthly || t.budget.total)
        .map((t) => tenantSpend(services, t)),
    );
    const live = { sandboxes: 0, sessions: 0 };
    for (const t of tenants) {
      live.sandboxes += await stores.ownership.activeCount("sandbox", t.id);
      live.sessions += await stores.ownership.activeCount("session", t.id);
    }
    const ids = tenants.map((t) => t.id);
    const [savings, history] = await Promise.all([
      fleetSavings(services, ids),
      spendHistory(services, ids, viewer.admin ? undefined : viewer.tenant),
    ]);
    // With several upstream accounts, admins see each one's breaker, the credit spend settled on it and its own wallet.
    const upstreamAccounts = services.upstream.accounts;
    const accounts: AccountRow[] | undefined =
      viewer.admin && upstreamAccounts?.configured
        ? await Promise.all(
            upstreamAccounts.snapshot().map(async (a) => ({
              ...a,
              settledUsd: atomicToUsd(await settledCostSoFar(services, a.id)),
              wallet: services.wallets?.addressOf(a.id),
            })),
          )
        : undefined;
    return render(
      c,
      <OverviewPage
        viewer={viewer}
        nonce={c.get("nonce")}
        spends={spends}
        savings={savings}
        live={live}
        history={history}
        accounts={accounts}
        {...extra}
      />,
      status,
    );
  }

  return {
    "console.overview": (c) => overview(c),

    "console.tenants.create": async (c) => {
      requireAdmin(c);
      const form = await formOf(c);
      const value = withoutUndefined({
        id: field(form, "id"),
        scopes: fields(form, "scopes"),
        budget: withoutUndefined({ daily: field(form, "budget.daily"), monthly: field(form, "budget.monthly") }),
        quotas: withoutUndefined({ requestsPerMinute: numberField(form, "quotas.requestsPerMinute") }),
        keyLabel: field(form, "keyLabel"),
      });
      let created: Awaited<ReturnType<typeof createTenant>>;
      try {
        created = await createTenant(services, actor(c), formValue(tenantCreateBody, value));
      } catch (err) {
        if (err instanceof GatewayError && (err.status === 400 || err.status === 409))
          return overview(c, { formError: err.message }, err.status);
        throw err;
      }
      return overview(c, { issued: { tenant: created.tenant.id, id: created.keyId, key: created.key } }, 201);
    },
  };
}
