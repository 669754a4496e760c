// The console's view of live sandboxes and sessions: the ownership registry says whose they are, the upstream says
// what state each is in; Stop goes through the same steps as the gateway's own stop routes.
import type { Context } from "hono";
import type { GatewayServices } from "../services.js";
import { stopUpstream } from "../operators/actions/kill-switch.js";
import { settleResource } from "../payments/index.js";
import { sandboxCustody } from "../sandboxes/custody.js";

export type LiveKind = "sandbox" | "session";

export interface LiveResource {
  kind: LiveKind;
  id: string;
  tenant: string;
  /** The upstream's status ("active", "closed"...), or "unknown" when it could not be asked. */
  status: string;
  createdAt?: string;
  /** Seconds since creation, while it is running. */
  runningSeconds?: number;
  /** What its credit hold (reserved, not yet settled) stands at, in atomic USD; undefined without one. */
  hold?: bigint;
  /** When the hold ends at the latest (the resource's timeout), epoch ms. */
  holdEndsAt?: number;
}

/** The newest resources of each kind and tenant the console asks the upstream about. */
const PER_TENANT = 20;
const DETAIL_PATH: Record<LiveKind, string> = { sandbox: "/api/sandbox", session: "/api/session" };

async function upstreamStatus(services: GatewayServices, kind: LiveKind, id: string): Promise<{ status: string; createdAt?: string }> {
  const { upstream } = services;
  try {
    const path = `${DETAIL_PATH[kind]}/${encodeURIComponent(id)}`;
    const res = await upstream.transport.request({
      url: `${upstream.origin}${path}`,
      method: "GET",
      headers: await upstream.headersFor(`console-${crypto.randomUUID()}`, path),
      signal: AbortSignal.timeout(Math.min(services.config.upstream.timeoutMs, 10_000)),
    });
    if (res.status === 404) {
      await res.body?.cancel().catch(() => {});
      return { status: "gone" };
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      return { status: "unknown" };
    }
    const detail = (await res.json()) as { status?: unknown; createdAt?: unknown };
    return {
      status: typeof detail.status === "string" ? detail.status : "unknown",
      createdAt: typeof detail.createdAt === "string" ? detail.createdAt : undefined,
    };
  } catch {
    return { status: "unknown" };
  }
}

/** The tenants' sandboxes and sessions, newest first, each with the upstream's current status. */
export async function liveResources(services: GatewayServices, tenants: string[]): Promise<LiveResource[]> {
  const owned: Array<{ kind: LiveKind; id: string; tenant: string }> = [];
  for (const tenant of tenants) {
    for (const kind of ["sandbox", "session"] as const) {
      for (const id of (await services.stores.ownership.list(kind, tenant)).slice(0, PER_TENANT)) owned.push({ kind, id, tenant });
    }
  }
  const now = services.now();
  return Promise.all(
    owned.map(async (r) => {
      const [status, holds] = await Promise.all([
        upstreamStatus(services, r.kind, r.id),
        services.stores.ledger.list({ resource: `${r.kind}:${r.id}`, state: "reserved", limit: 20 }),
      ]);
      const live: LiveResource = { ...r, ...status };
      const started = status.createdAt ? Date.parse(status.createdAt) : Number.NaN;
      if (status.status === "active" && !Number.isNaN(started)) live.runningSeconds = Math.max(0, Math.floor((now - started) / 1000));
      if (holds.length) {
        live.hold = holds.reduce((sum, e) => sum + BigInt(e.amount), 0n);
        const ends = holds.map((e) => (e.validBefore ? e.validBefore * 1000 : 0)).filter((t) => t > 0);
        if (ends.length) live.holdEndsAt = Math.max(...ends);
      }
      return live;
    }),
  );
}

/**
 * Stops a resource the caller may see (the owner check is the caller's): the upstream stop, then what the stop routes
 * do after it — marked inactive, its runtime credential dropped, its metered minutes settled. Returns the upstream's
 * answer: 200, or 404/409 for one already gone.
 */
export async function stopResource(services: GatewayServices, kind: LiveKind, id: string, c?: Context): Promise<number | string> {
  const status = await stopUpstream(services, kind, id);
  if (status === 200 || status === 404 || status === 409) {
    await services.stores.ownership.setActive(kind, id, false);
    if (kind === "sandbox") await sandboxCustody(services).forget(id);
    await settleResource(services, kind, id, c);
  }
  return status;
}
