// Per-tenant quotas on creations: active sandboxes and sessions, timeoutMinutes, allowed images and regions.
import type { Context, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import type { ResourceKind } from "../../src/state/types.js";
import { presentedKey, type Tenant } from "../../src/tenants.js";
import { upstreamJson } from "../../src/upstream.js";
import { CreationSlots } from "./slots.js";
import { refreshActive, rememberPaidSession } from "./reconcile.js";
import { requestUrl } from "../../src/request-url.js";

/** The creations a quota applies to, by method and path. */
const CREATIONS: Record<string, ResourceKind> = {
  "POST /api/sandbox": "sandbox",
  "POST /api/session": "session",
  "POST /x402/session": "session",
};

type Quotas = Tenant["quotas"];

function refuse(status: number, code: string, message: string, figures: Record<string, unknown>): never {
  throw new GatewayError(status, code, message, figures);
}

/** Applies timeout, image and region limits to a creation body; returns the body to forward (defaults filled in). */
async function checkBody(c: Context<GatewayEnv>, services: GatewayServices, kind: ResourceKind, q: Quotas, body: Record<string, any>): Promise<Record<string, any>> {
  const out = { ...body };
  if (q.maxTimeoutMinutes !== undefined) {
    if (out.timeoutMinutes === undefined) out.timeoutMinutes = q.maxTimeoutMinutes; // the upstream default may be longer
    else if (typeof out.timeoutMinutes === "number" && out.timeoutMinutes > q.maxTimeoutMinutes) {
      refuse(403, "quota_timeout", `timeoutMinutes ${out.timeoutMinutes} is above this tenant's limit of ${q.maxTimeoutMinutes}.`, { limit: q.maxTimeoutMinutes, requested: out.timeoutMinutes });
    }
  }
  if (q.regions) {
    if (out.region === undefined && q.regions.length > 0) out.region = q.regions[0];
    else if (!q.regions.includes(String(out.region))) {
      refuse(403, "quota_region", `Region "${out.region}" is not allowed for this tenant (allowed: ${q.regions.join(", ") || "none"}).`, { allowed: q.regions, requested: out.region });
    }
  }
  if (kind === "sandbox" && q.images) {
    const image = typeof out.imageName === "string" ? out.imageName : await imageOfSnapshot(c, services, out.snapshotName);
    if (image !== undefined && !q.images.includes(image)) {
      refuse(403, "quota_image", `Image "${image}" is not allowed for this tenant (allowed: ${q.images.join(", ") || "none"}).`, { allowed: q.images, requested: image });
    }
    if (image === undefined && out.snapshotName === undefined) refuse(403, "quota_image", "imageName is required: this tenant may only use listed images.", { allowed: q.images });
  }
  return out;
}

/** A sandbox started from a snapshot runs the snapshot's image; unknown snapshots are left to the upstream's 404. */
async function imageOfSnapshot(c: Context<GatewayEnv>, services: GatewayServices, name: unknown): Promise<string | undefined> {
  if (typeof name !== "string" || !name) return undefined;
  const res = await services.upstream.call(c, { method: "GET", path: `/api/snapshots/${encodeURIComponent(name)}` });
  if (!res.ok) {
    await res.body?.cancel();
    return undefined;
  }
  const body = await upstreamJson(res);
  const image = body?.snapshot?.imageName ?? body?.imageName;
  return typeof image === "string" ? image : undefined;
}

async function readObject(c: Context): Promise<Record<string, any> | undefined> {
  // Read from the raw request (not c.req.text(), which would cache this copy for the route downstream).
  const text = await c.req.raw.text();
  if (!text.trim()) return {};
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a tenant's quotas before a sandbox or session is created, and holds a slot while it is.
 * Requests without a valid tenant key pass untouched (the route refuses them).
 * @example app.use(quotas(services))
 */
export function quotas(services: GatewayServices): MiddlewareHandler<GatewayEnv> {
  const slots = new CreationSlots(services.stores.kv, services.stores.ownership, services.now);
  const limitOf = (q: Quotas, kind: ResourceKind) => (kind === "sandbox" ? q.maxSandboxes : q.maxSessions);

  return async function quotaMiddleware(c, next) {
    const path = requestUrl(c).pathname.replace(/\/+$/, "");
    const stop = c.req.method === "PUT" && /^\/x402\/session\/[^/]+\/stop$/.test(path);
    const kind = CREATIONS[`${c.req.method} ${path}`];
    if (!kind) {
      await next();
      if (stop && c.res.ok) await services.stores.ownership.setActive("session", decodeURIComponent(path.split("/")[3]!), false);
      return;
    }
    const tenant = await services.directory.authenticate(presentedKey(c.req.raw.headers)).catch(() => undefined);
    if (!tenant) return next();
    const q = tenant.quotas;
    const limit = limitOf(q, kind);
    const shapesBody = q.maxTimeoutMinutes !== undefined || q.regions !== undefined || (kind === "sandbox" && q.images !== undefined);
    if (limit === undefined && !shapesBody) return next();
    const body = await readObject(c);
    if (body === undefined) {
      throw new GatewayError(400, "invalid_json", "The request body must be a JSON object.");
    }
    const forwarded = await checkBody(c, services, kind, q, body);
    // The body was read here; the route downstream reads the (possibly completed) copy.
    const headers = new Headers(c.req.raw.headers);
    headers.set("content-type", "application/json");
    headers.delete("content-length");
    c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers, body: JSON.stringify(forwarded), signal: c.req.raw.signal });

    if (limit === undefined) return next();
    let slot = await slots.reserve(kind, tenant.id, limit);
    if (!slot.ok) {
      // Resources may have ended upstream unseen (timeouts): re-check them once before refusing.
      await refreshActive(c, services, kind, tenant.id);
      slot = await slots.reserve(kind, tenant.id, limit);
    }
    if (!slot.ok) {
      const noun = kind === "sandbox" ? "sandboxes" : "sessions";
      refuse(429, `quota_${noun}`, `This tenant may have at most ${limit} active ${noun}; ${slot.active} active and ${slot.pending} being created. Stop one to free a slot.`, {
        limit,
        current: slot.active,
        pending: slot.pending,
      });
    }
    try {
      await next();
      if (c.res.ok) await claimCreated(c, services, kind, tenant.id, path.startsWith("/x402/"));
    } finally {
      await slot.release();
    }
  };
}

/** Makes sure a created resource counts against the tenant even when the route downstream did not claim it. */
async function claimCreated(c: Context<GatewayEnv>, services: GatewayServices, kind: ResourceKind, tenant: string, paid: boolean) {
  let created: Record<string, any>;
  try {
    created = await c.res.clone().json();
  } catch {
    return;
  }
  if (!created?.id) return;
  const id = String(created.id);
  if (paid) await rememberPaidSession(services, id, created.expiresAt);
  if ((await services.stores.ownership.owner(kind, id)) === undefined) await services.stores.ownership.claim(kind, id, tenant);
}
