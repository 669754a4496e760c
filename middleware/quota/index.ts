// Per-tenant quotas on creations: active sandboxes and sessions, timeoutMinutes, allowed images and regions.
import type { Context, MiddlewareHandler } from "hono";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import type { ResourceKind } from "../../src/state/types.js";
import type { Tenant } from "../../src/identity/tenants.js";
import { callerTenant } from "../../src/identity/caller.js";
import { jsonBody, setJsonBody } from "../../src/routing/json-body.js";
import { imageOfSnapshot } from "../../src/sandboxes/snapshot-image.js";
import type { WireRecord } from "../../src/upstream/records.js";
import { claimCreated, claimedHere, createdBy } from "../../src/routing/created.js";
import type { Quota } from "../../src/routing/table.js";
import { CreationSlots } from "./slots.js";
import { refreshActive, rememberPaidSession } from "./reconcile.js";

type Quotas = Tenant["quotas"];

/**
 * The quota step counts slots in the state stores (kv, ownership), asks the upstream for a snapshot's image and for
 * resources that may have ended unseen, reads the clock, logs a creation it claims, and releases a slot behind the
 * answer; nothing else.
 */
type QuotaServices = Pick<GatewayServices, "stores" | "upstream" | "now" | "platform" | "logger" | "background">;

function refuse(status: number, code: string, message: string, figures: Record<string, unknown>): never {
  throw new GatewayError(status, code, message, figures);
}

/** Applies timeout, image and region limits to a creation body; returns the body to forward (defaults filled in). */
async function checkBody(c: Context, services: QuotaServices, kind: ResourceKind, q: Quotas, body: WireRecord): Promise<WireRecord> {
  const out = { ...body };
  if (q.maxTimeoutMinutes !== undefined) {
    const max = q.maxTimeoutMinutes;
    const t = out.timeoutMinutes;
    // Absent or null, the upstream applies its own default, which may be longer: the tenant's limit is sent instead.
    if (t === undefined || t === null) out.timeoutMinutes = max;
    // The upstream reads 0 as "no timeout" and coerces strings: only a number of minutes within the limit goes.
    else if (typeof t !== "number" || !Number.isFinite(t) || t <= 0 || t > max) {
      const what = typeof t === "number" && t > max ? `${t} is above` : `${JSON.stringify(t)} is not a number of minutes within`;
      refuse(403, "quota_timeout", `timeoutMinutes ${what} this tenant's limit of ${max}.`, { limit: max, requested: t });
    }
  }
  if (q.regions) {
    if (out.region === undefined && q.regions.length > 0) out.region = q.regions[0];
    else if (!q.regions.includes(String(out.region))) {
      const named = out.region === undefined ? "No region" : `Region "${out.region}"`;
      refuse(403, "quota_region", `${named} is not allowed for this tenant (allowed: ${q.regions.join(", ") || "none"}).`, {
        allowed: q.regions,
        requested: out.region,
      });
    }
  }
  if (kind === "sandbox" && q.images) {
    const allowed = q.images;
    // A body may name both; the upstream starts from the snapshot then, so its image is checked as well.
    const images = [typeof out.imageName === "string" ? out.imageName : undefined, await imageOfSnapshot(c, services, out.snapshotName)];
    for (const image of images) {
      if (image !== undefined && !allowed.includes(image)) {
        refuse(403, "quota_image", `Image "${image}" is not allowed for this tenant (allowed: ${allowed.join(", ") || "none"}).`, {
          allowed,
          requested: image,
        });
      }
    }
    if (images[0] === undefined && out.snapshotName === undefined)
      refuse(403, "quota_image", "imageName is required: this tenant may only use listed images.", { allowed });
  }
  return out;
}

/** How long a tenant's count learned from a claim is trusted to choose the path (it never decides a refusal). */
const KNOWN_MS = 30_000;

/**
 * Checks the caller's quotas before a sandbox or session is created (row `quota`). The count is exact either way: every
 * creation it counts is claimed with the limit in the claim's own state step (OwnershipRegistry.claimWithin), so of
 * racing creations across instances never more than the limit become the tenant's. Which path a creation takes:
 * - with room it knows of (this instance learned the tenant's count from a claim within KNOWN_MS, and with its own
 *   creations in flight at least one slot stays free after this one), none: the quota waits for no round trip of its
 *   own. A creation that still finds the tenant full at its claim (other instances filled it meanwhile) is refused
 *   429 and what it made is stopped upstream behind the answer;
 * - otherwise (unknown, or near the limit), a slot reserved before the upstream call (CreationSlots: two round trips),
 *   so the last slots are never created over;
 * - a paid creation (`until: "expiry"`, an x402 session) always reserves first and is claimed without the limit: a
 *   refusal comes before anything is paid, never after.
 * A created one counted `until: "expiry"` is remembered with its paid end time. The caller is the chain's
 * (middleware/identify/index.ts); the body is the chain's one JSON copy, completed here with the defaults a quota
 * imposes. Trade-off and figures: docs/rate-limits.md#quotas-on-creations.
 * @example app.on("POST", "/api/sandbox", identify(services, row), quota(services, row.quota), handler)
 */
export function quota(services: QuotaServices, spec: Quota): MiddlewareHandler {
  const kind = spec.kind;
  const untilExpiry = spec.until === "expiry";
  const noun = kind === "sandbox" ? "sandboxes" : "sessions";
  const slots = new CreationSlots(services.stores.kv, services.stores.ownership, services.now);
  // This gateway's view, per tenant: the count its last claim answered, and its own creations in flight.
  const known = new Map<string, { active: number; at: number }>();
  const flying = new Map<string, number>();

  const refusal = (limit: number, active: number, pending: number) =>
    new GatewayError(
      429,
      `quota_${noun}`,
      `This tenant may have at most ${limit} active ${noun}; ${active} active and ${pending} being created. Stop one to free a slot.`,
      { limit, current: active, pending },
    );

  return async function quotaMiddleware(c, next) {
    const tenant = callerTenant(c);
    const q = tenant.quotas;
    const limit = kind === "sandbox" ? q.maxSandboxes : q.maxSessions;
    const shapesBody = q.maxTimeoutMinutes !== undefined || q.regions !== undefined || (kind === "sandbox" && q.images !== undefined);
    if (limit === undefined && !shapesBody) return next();
    if (shapesBody) setJsonBody(c, await checkBody(c, services, kind, q, { ...(await jsonBody(c, services.platform)).json }));
    if (limit === undefined) return next();

    const seen = known.get(tenant.id);
    const inFlight = flying.get(tenant.id) ?? 0;
    const roomKnown = seen !== undefined && services.now() - seen.at < KNOWN_MS && seen.active + inFlight + 2 <= limit;
    let release: (() => Promise<void>) | undefined;
    if (untilExpiry || !roomKnown) {
      let slot = await slots.reserve(kind, tenant.id, limit);
      if (!slot.ok) {
        // Resources may have ended upstream unseen (timeouts): re-check them once before refusing.
        await refreshActive(c, services, kind, tenant.id);
        slot = await slots.reserve(kind, tenant.id, limit);
      }
      if (!slot.ok) {
        known.set(tenant.id, { active: slot.active, at: services.now() });
        throw refusal(limit, slot.active, slot.pending);
      }
      release = slot.release;
    }
    if (!untilExpiry) {
      c.set("quotaClaim", {
        kind,
        limit,
        recheck: async () => void (await refreshActive(c, services, kind, tenant.id)),
        learned: (active) => known.set(tenant.id, { active, at: services.now() }),
        refuse: (id, active) => {
          // Made, but over the limit: stopped upstream, behind the answer (it was never the tenant's to use).
          services.background(c, stopCreated(c, services, kind, id), "quota over-limit stop");
          return refusal(limit, active, 0);
        },
      });
    }
    flying.set(tenant.id, inFlight + 1);
    try {
      await next();
      if (c.res.ok) await countCreated(c, services, kind, tenant.id, untilExpiry);
    } finally {
      const left = (flying.get(tenant.id) ?? 1) - 1;
      if (left > 0) flying.set(tenant.id, left);
      else flying.delete(tenant.id);
      // Behind the answer: the creation is claimed (active) by now, so the slot held a little longer only counts it
      // twice for a round trip, never misses it; sent before the answer, it lands before the client's next request.
      if (release) services.background(c, release(), "quota slot release");
    }
  };
}

/** Stops a created resource the tenant may not keep (its claim found the quota full). */
async function stopCreated(c: Context, services: QuotaServices, kind: ResourceKind, id: string): Promise<void> {
  const res = await services.upstream.call(c, { method: "PUT", path: `/api/${kind}/${encodeURIComponent(id)}/stop` });
  await res.body?.cancel();
  if (!res.ok) services.logger.error("quota.stop_failed", { kind, id, status: res.status });
}

/**
 * Makes sure a created resource counts against the tenant: claimed (src/routing/created.ts, the one place that claims)
 * unless the handler claimed it already; one counted until expiry is remembered with its end time.
 */
async function countCreated(c: Context, services: QuotaServices, kind: ResourceKind, tenant: string, untilExpiry: boolean) {
  const created = await createdBy(c);
  if (!created.id) return;
  const id = created.id;
  if (untilExpiry) await rememberPaidSession(services, id, created.expiresAt);
  if (!claimedHere(c, kind, id)) await claimCreated(services, c, { kind, id, tenant });
}
