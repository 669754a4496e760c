// Frees quota held by resources that ended upstream without the gateway seeing it (timeouts, crashes, stops elsewhere).
import type { Context } from "hono";
import type { GatewayServices } from "../../src/services.js";
import type { ResourceKind } from "../../src/state/types.js";
import { stateKeys } from "../../src/state/keys.js";

/** How many of a tenant's newest resources are re-checked before a creation is refused. */
const RECHECK_LIMIT = 50;
const ACTIVE = new Set(["active", "pending", "starting", "running"]);

/** Reconciling reads the state stores, the upstream (is it still running?) and the clock. */
type ReconcileServices = Pick<GatewayServices, "stores" | "upstream" | "now">;

/** Paid (x402) sessions are not visible on /api/session/:id; the gateway keeps their expiry instead. */
export async function rememberPaidSession(
  services: Pick<GatewayServices, "stores" | "now">,
  id: string,
  expiresAt: string | undefined,
): Promise<void> {
  const at = expiresAt ? Date.parse(expiresAt) : NaN;
  const exp = Number.isNaN(at) ? services.now() + 60 * 60_000 : at;
  await services.stores.kv.set(stateKeys.paidSession(id), String(exp), Math.max(1000, exp - services.now() + 3600_000));
}

async function stillActive(c: Context, services: ReconcileServices, kind: ResourceKind, id: string): Promise<boolean> {
  if (kind === "session") {
    const paidUntil = await services.stores.kv.get(stateKeys.paidSession(id));
    if (paidUntil) return Number(paidUntil) > services.now();
  }
  let res: Response;
  try {
    res = await services.upstream.call(c, { method: "GET", path: `/api/${kind}/${encodeURIComponent(id)}` });
  } catch {
    return true; // cannot tell: keep counting it (never admit above the limit on a guess)
  }
  if (res.status === 404) return false;
  if (!res.ok) {
    await res.body?.cancel();
    return true;
  }
  try {
    const body = (await res.json()) as { status?: unknown };
    return typeof body.status !== "string" || ACTIVE.has(body.status);
  } catch {
    return true;
  }
}

/** Re-checks the tenant's newest resources upstream and marks the ended ones inactive; returns the new active count. */
export async function refreshActive(c: Context, services: ReconcileServices, kind: ResourceKind, tenant: string): Promise<number> {
  const { ownership } = services.stores;
  const ids = (await ownership.list(kind, tenant)).slice(0, RECHECK_LIMIT);
  await Promise.all(
    ids.map(async (id) => {
      if (!(await stillActive(c, services, kind, id))) await ownership.setActive(kind, id, false);
    }),
  );
  return ownership.activeCount(kind, tenant);
}
