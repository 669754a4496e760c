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

/**
 * Checks the caller's quotas before a sandbox or session is created (row `quota`), and holds a slot while it is. A
 * created one counted `until: "expiry"` (an x402 session) is remembered with its paid end time.
 * The caller is the chain's (middleware/identify/index.ts); the body is the chain's one JSON copy, completed here with the
 * defaults a quota imposes.
 * @example app.on("POST", "/api/sandbox", identify(services, row), quota(services, row.quota), handler)
 */
export function quota(services: QuotaServices, spec: Quota): MiddlewareHandler {
  const kind = spec.kind;
  const untilExpiry = spec.until === "expiry";
  const slots = new CreationSlots(services.stores.kv, services.stores.ownership, services.now);

  return async function quotaMiddleware(c, next) {
    const tenant = callerTenant(c);
    const q = tenant.quotas;
    const limit = kind === "sandbox" ? q.maxSandboxes : q.maxSessions;
    const shapesBody = q.maxTimeoutMinutes !== undefined || q.regions !== undefined || (kind === "sandbox" && q.images !== undefined);
    if (limit === undefined && !shapesBody) return next();
    if (shapesBody) setJsonBody(c, await checkBody(c, services, kind, q, { ...(await jsonBody(c, services.platform)).json }));
    if (limit === undefined) return next();
    let slot = await slots.reserve(kind, tenant.id, limit);
    if (!slot.ok) {
      // Resources may have ended upstream unseen (timeouts): re-check them once before refusing.
      await refreshActive(c, services, kind, tenant.id);
      slot = await slots.reserve(kind, tenant.id, limit);
    }
    if (!slot.ok) {
      const noun = kind === "sandbox" ? "sandboxes" : "sessions";
      refuse(
        429,
        `quota_${noun}`,
        `This tenant may have at most ${limit} active ${noun}; ${slot.active} active and ${slot.pending} being created. Stop one to free a slot.`,
        {
          limit,
          current: slot.active,
          pending: slot.pending,
        },
      );
    }
    try {
      await next();
      if (c.res.ok) await countCreated(c, services, kind, tenant.id, untilExpiry);
    } finally {
      // Behind the answer: the creation is claimed (active) by now, so the slot held a little longer only counts it
      // twice for a round trip, never misses it; sent before the answer, it lands before the client's next request.
      services.background(c, slot.release(), "quota slot release");
    }
  };
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
