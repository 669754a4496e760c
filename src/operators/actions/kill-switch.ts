// The kill switch: stops a tenant's open sandboxes and sessions through the upstream, revokes every gateway token it
// holds (open WebSockets then close within 2 s, on every instance) and records it. Pulled by an admin disabling or
// deleting a tenant, and by a budget running out for a tenant with `onExhausted = "stop"` (once per window, fleet-wide:
// ./money-listener.ts hears it from payments).
import type { GatewayServices } from "../../services.js";
import type { ResourceKind } from "../../state/types.js";
import { settleResource } from "../../payments/index.js";

export interface KillReport {
  tenant: string;
  reason: string;
  stopped: { sandboxes: string[]; sessions: string[] };
  /** Resources the upstream would not stop (already gone, or an error), with its status. */
  failed: Array<{ kind: ResourceKind; id: string; status: number | string }>;
}

/** The newest resources of each kind the kill switch looks at (older ones are long stopped). */
const MAX_RESOURCES = 200;
const STOP_PATH: Partial<Record<ResourceKind, string>> = { sandbox: "/api/sandbox", session: "/api/session" };

/** Asks the upstream to stop one sandbox or session; its status, or why it could not be reached. */
export async function stopUpstream(services: GatewayServices, kind: ResourceKind, id: string): Promise<number | string> {
  const { upstream } = services;
  try {
    const path = `${STOP_PATH[kind]}/${encodeURIComponent(id)}/stop`;
    const res = await upstream.transport.request({
      url: `${upstream.origin}${path}`,
      method: "PUT",
      headers: await upstream.headersFor(`kill-${crypto.randomUUID()}`, path),
      signal: AbortSignal.timeout(services.config.upstream.timeoutMs),
    });
    await res.body?.cancel().catch(() => {});
    return res.status;
  } catch (err) {
    return (err as Error)?.name === "TimeoutError" ? "timeout" : "unreachable";
  }
}

/**
 * Stops everything the tenant has open and revokes its tokens. Safe to call again: stopping a stopped resource is
 * harmless, and a second revocation only moves the cut-off.
 */
export async function killTenant(services: GatewayServices, tenantId: string, reason: string, actor = "system"): Promise<KillReport> {
  const { stores, logger } = services;
  await services.tokens.revokeTenant(tenantId);
  const report: KillReport = { tenant: tenantId, reason, stopped: { sandboxes: [], sessions: [] }, failed: [] };
  for (const kind of ["sandbox", "session"] as const) {
    const ids = (await stores.ownership.list(kind, tenantId)).slice(0, MAX_RESOURCES);
    const results = await Promise.all(ids.map(async (id) => ({ id, status: await stopUpstream(services, kind, id) })));
    for (const { id, status } of results) {
      if (status === 200) {
        (kind === "sandbox" ? report.stopped.sandboxes : report.stopped.sessions).push(id);
        await stores.ownership.setActive(kind, id, false);
      } else if (status !== 404 && status !== 409) {
        report.failed.push({ kind, id, status });
        continue;
      } else {
        await stores.ownership.setActive(kind, id, false); // already gone upstream
      }
      // Its credits hold settles now, for the minutes it ran: the rest goes back rather than waiting for expiry.
      await settleResource(services, kind, id);
    }
  }
  logger.info("kill switch", {
    tenant: tenantId,
    reason,
    actor,
    sandboxes: report.stopped.sandboxes.length,
    sessions: report.stopped.sessions.length,
    failed: report.failed.length,
  });
  services.metrics.killSwitch("tenant_killed");
  services.metrics.killSwitch("resource_stopped", report.stopped.sandboxes.length + report.stopped.sessions.length);
  await stores.audit.append({ at: services.now(), actor, action: "tenant.kill", target: `tenant:${tenantId}`, after: report });
  return report;
}
