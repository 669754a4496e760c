// Route handlers shared by many rows: forward as it is, refuse on purpose, create-and-claim, owned lists, jobs.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { Upstream, pathAndQuery, upstreamJson } from "../platform/upstream.js";
import { ownedPage } from "../sandboxes/owned-list.js";
import { keepOwnedItems } from "./owned-items.js";
import { callerTenant } from "../../middleware/identify/index.js";
import { settleJobFrom, TERMINAL } from "../../middleware/meter/index.js";
import type { RouteRow } from "./table.js";
import { readWire } from "./upstream-records.js";
import { CreatedAnswer } from "./created.js";

export type RowHandler = (c: Context<GatewayEnv>, row: RouteRow) => Promise<Response> | Response;

/** The body to forward: the chain's JSON copy when one was read (and maybe completed), else the client's stream. */
export function forwardBody(c: Context<GatewayEnv>): { headers: Headers; body: string | ReadableStream<Uint8Array> | null } {
  const kept = c.get("jsonBody");
  const headers = new Headers(c.req.raw.headers);
  if (kept) {
    headers.set("content-type", "application/json");
    headers.delete("content-length");
    return { headers, body: kept.text };
  }
  const hasBody = c.req.method !== "GET" && c.req.method !== "HEAD" && !c.get("forwardNoBody");
  return { headers, body: hasBody ? c.req.raw.body : null };
}

/** Sends the row's request upstream with the operator's key. */
export function forwardUpstream(c: Context<GatewayEnv>, services: GatewayServices): Promise<Response> {
  const { headers, body } = forwardBody(c);
  return services.upstream.call(c, { method: c.req.method, path: pathAndQuery(c), headers, body });
}

async function claimFrom(services: GatewayServices, c: Context<GatewayEnv>, row: RouteRow, res: Response): Promise<void> {
  if (!row.creates || !res.ok) return;
  let created: CreatedAnswer;
  try {
    created = readWire(CreatedAnswer, await res.clone().json());
  } catch {
    throw new GatewayError(502, "upstream_bad_response", "The upstream created something but did not answer with JSON.");
  }
  const id = created.jobId ?? created.id;
  if (typeof id !== "string" && typeof id !== "number")
    throw new GatewayError(502, "upstream_bad_response", "The upstream created something but did not say its id.");
  const tenant = callerTenant(c);
  // First claim wins: an upstream answering a creation with something another tenant owns moves nothing.
  if (!(await services.stores.ownership.claim(row.creates, String(id), tenant.id))) throw claimRefused(row.creates);
  services.logger.info(`${row.creates}.created`, { tenant: tenant.id, id: String(id), route: row.name });
}

/** A JSON object answer, read once for what the gateway checks in it (the client still gets the stream). */
async function answerObject(res: Response): Promise<Record<string, unknown> | undefined> {
  if (!res.ok || !(res.headers.get("content-type") ?? "").includes("json")) return undefined;
  try {
    const body = await res.clone().json();
    return body && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An agent task's answer names the upstream's own live view of its browser (`liveUrl`, upstream host and credential):
 * it is never relayed. Both SDKs take null there (Node `string | null`, Python `Optional[str]`); a kept-open browser
 * is a session of the caller's, whose detail carries the gateway's live view.
 */
async function withoutUpstreamLiveUrl(res: Response, body: Record<string, unknown> | undefined): Promise<Response> {
  if (typeof body?.liveUrl !== "string") return Upstream.relay(res);
  await res.body?.cancel().catch(() => {});
  return jsonResponse(res.status, { ...body, liveUrl: null });
}

/** A creation whose answer names a resource another tenant owns: nothing is handed over. */
export const claimRefused = (kind: string) =>
  new GatewayError(409, "resource_conflict", `The upstream answered with a ${kind} this tenant cannot claim; nothing was handed over.`);

export function commonHandlers(services: GatewayServices): Record<string, RowHandler> {
  return {
    forward: async (c, row) => {
      const res = await forwardUpstream(c, services);
      // A resource deleted through the gateway has ended: its owner is kept for the retention window, then forgotten.
      if (res.ok && c.req.method === "DELETE" && row.owns)
        await services.stores.ownership.setActive(row.owns.kind, c.req.param(row.owns.param)!, false);
      return Upstream.relay(res);
    },

    refuse: (_c, row) => {
      const r = row.refuse!;
      throw new GatewayError(r.status, r.code, r.message);
    },

    "owned.create": async (c, row) => {
      const res = await forwardUpstream(c, services);
      await claimFrom(services, c, row, res);
      return Upstream.relay(res);
    },

    "owned.list": async (c, row) => {
      const spec = row.list!;
      const tenant = callerTenant(c);
      if (spec.field === null) {
        // An unpaged list (extensions): filtered in the shape it came in, a bare array or `{"extensions":[…]}`.
        const res = await forwardUpstream(c, services);
        if (!res.ok) return Upstream.relay(res);
        const all = await upstreamJson(res);
        const owned = new Set(await services.stores.ownership.list(spec.kind, tenant.id));
        return jsonResponse(200, keepOwnedItems(all, owned));
      }
      const page = await ownedPage(c, services, tenant, { path: new URL(c.req.url).pathname, field: spec.field, kind: spec.kind });
      if ("passthrough" in page) return page.passthrough;
      return jsonResponse(200, { [spec.field]: page.items, totalCount: page.totalCount, page: page.page, perPage: page.perPage });
    },

    "job.start": async (c, row) => {
      const res = await forwardUpstream(c, services);
      await claimFrom(services, c, row, res);
      return withoutUpstreamLiveUrl(res, await answerObject(res));
    },

    "job.read": async (c, row) => {
      const res = await forwardUpstream(c, services);
      const id = c.req.param(row.owns!.param)!;
      await settleJobFrom(services, id, res, c);
      const body = await answerObject(res);
      // A job seen to end is an ended resource: its ownership record's retention starts (state.endedRetentionDays).
      if (row.owns && TERMINAL.has(String(body?.status ?? ""))) await services.stores.ownership.setActive(row.owns.kind, id, false);
      return withoutUpstreamLiveUrl(res, body);
    },
  };
}
