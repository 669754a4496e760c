// Route handlers shared by many rows: forward as it is, refuse on purpose, create-and-claim, owned lists, jobs.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { Upstream, pathAndQuery, upstreamJson } from "../upstream/upstream.js";
import { parseUpstreamJson } from "../upstream/records.js";
import { ownedPage } from "../sandboxes/owned-list.js";
import { keepOwnedItems } from "./owned-items.js";
import { callerTenant } from "../identity/caller.js";
import { settleJobFrom, TERMINAL } from "../payments/index.js";
import type { RouteRow } from "./row.js";
import { claimCreated, noteCreated } from "./created.js";
import type { HandlerName } from "./handler-names.js";

export type RowHandler = (c: Context<GatewayEnv>, row: RouteRow) => Promise<Response> | Response;

/**
 * Route handlers by name: what a surface implements, and (all of them together) the registry src/gateway.ts assembles.
 * A name outside the registry's list (./handler-names.ts) fails to compile.
 */
export type Handlers = Partial<Record<HandlerName, RowHandler>>;

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

/** Two reads of one list (two upstream accounts'): a bare array, or the arrays of an object's fields, concatenated. */
function mergeLists(into: unknown, next: unknown): unknown {
  if (into === undefined) return next;
  if (Array.isArray(into) && Array.isArray(next)) return [...into, ...next];
  if (!isObject(into) || !isObject(next)) return into;
  const out: Record<string, unknown> = { ...into };
  for (const [k, v] of Object.entries(next)) {
    const mine = out[k];
    if (Array.isArray(mine) && Array.isArray(v)) out[k] = [...mine, ...v];
  }
  return out;
}

/** An answer that was not JSON (apart from JSON's own `null`). */
const NOT_JSON = Symbol("not JSON");

/** An answer's JSON, read once, from a clone (the answer may still be relayed as it came). */
async function answerJson(res: Response): Promise<unknown> {
  try {
    return parseUpstreamJson(await res.clone().text());
  } catch {
    return NOT_JSON;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/**
 * Claims what a creation answer (`answer`, read once) names for the caller, and notes it on the context for the chain's
 * quota and meter steps (src/routing/created.ts), which read it from there rather than from the answer again.
 */
async function claimAnswer(services: GatewayServices, c: Context<GatewayEnv>, row: RouteRow, answer: unknown): Promise<void> {
  if (!row.creates) return;
  if (answer === NOT_JSON)
    throw new GatewayError(502, "upstream_bad_response", "The upstream created something but did not answer with JSON.");
  const { id } = noteCreated(c, answer);
  if (id === undefined) throw new GatewayError(502, "upstream_bad_response", "The upstream created something but did not say its id.");
  await claimCreated(services, c, { kind: row.creates, id, tenant: callerTenant(c).id, route: row.name });
}

/**
 * A job's answer on its way to the client, post-processed once from its body read once (`answer`). It never relays
 * the upstream's own live view of an agent task's browser (`liveUrl`, upstream host and credential): both SDKs take
 * null there (Node `string | null`, Python `Optional[str]`); a kept-open browser is a session of the caller's, whose
 * detail carries the gateway's live view. `extra` fields (a task's `sessionId`) are added to a JSON object answer.
 */
async function presentJob(res: Response, answer: unknown, extra?: Record<string, unknown>): Promise<Response> {
  const object = res.ok && isObject(answer) ? answer : undefined;
  const declaredJson = (res.headers.get("content-type") ?? "").includes("json");
  const hideLiveUrl = declaredJson && typeof object?.liveUrl === "string";
  if (!object || (!hideLiveUrl && !extra)) return Upstream.relay(res);
  await res.body?.cancel().catch(() => {});
  return jsonResponse(res.status, Object.assign({}, object, hideLiveUrl ? { liveUrl: null } : undefined, extra));
}

/** Starts a job (a scrape, a crawl, an agent task): claimed, noted and answered from one read of the upstream's answer. */
export async function startJob(
  services: GatewayServices,
  c: Context<GatewayEnv>,
  row: RouteRow,
  extra?: Record<string, unknown>,
): Promise<Response> {
  const res = await forwardUpstream(c, services);
  if (!res.ok) return Upstream.relay(res);
  const answer = await answerJson(res);
  await claimAnswer(services, c, row, answer);
  return presentJob(res, answer, extra);
}

export function commonHandlers(services: GatewayServices): Handlers {
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
      if (res.ok && row.creates) await claimAnswer(services, c, row, await answerJson(res));
      return Upstream.relay(res);
    },

    "owned.list": async (c, row) => {
      const spec = row.list!;
      const tenant = callerTenant(c);
      if (spec.field === null) {
        // An unpaged list (extensions): filtered in the shape it came in, a bare array or `{"extensions":[…]}`; with
        // several upstream accounts, each one's read and the tenant's items merged.
        const accounts = services.upstream.accounts;
        const owned = new Set(await services.stores.ownership.list(spec.kind, tenant.id));
        let merged: unknown;
        for (const account of accounts?.configured ? accounts.list.map((a) => a.id) : [undefined]) {
          const res =
            account === undefined
              ? await forwardUpstream(c, services)
              : await services.upstream.call(c, { method: "GET", path: pathAndQuery(c), account });
          if (!res.ok) return Upstream.relay(res);
          merged = mergeLists(merged, keepOwnedItems(await upstreamJson(res), owned));
        }
        return jsonResponse(200, merged);
      }
      const page = await ownedPage(c, services, tenant, { path: new URL(c.req.url).pathname, field: spec.field, kind: spec.kind });
      if ("passthrough" in page) return page.passthrough;
      return jsonResponse(200, { [spec.field]: page.items, totalCount: page.totalCount, page: page.page, perPage: page.perPage });
    },

    "job.start": (c, row) => startJob(services, c, row),

    "job.read": async (c, row) => {
      const res = await forwardUpstream(c, services);
      if (!res.ok) return Upstream.relay(res);
      const id = c.req.param(row.owns!.param)!;
      const answer = await answerJson(res);
      const body = isObject(answer) ? answer : undefined;
      await settleJobFrom(services, id, body, c);
      // A job seen to end is an ended resource: its ownership record's retention starts (state.endedRetentionDays).
      if (row.owns && TERMINAL.has(String(body?.status ?? "")) && (res.headers.get("content-type") ?? "").includes("json"))
        await services.stores.ownership.setActive(row.owns.kind, id, false);
      return presentJob(res, answer);
    },
  };
}
