// Resources a request makes the upstream start beside the one it asks for. An agent task with `keepBrowserOpen` and no
// `sessionId` would leave the upstream's own session for the task open after it ends: a browser nobody owns, meters,
// lists or stops. The gateway creates that session first, through its own `POST /api/session` row (the same chain as a
// client's: scope, quota, per-minute meter, claim), and starts the task in it; so the kept-open browser is the caller's
// session like any other: listed, metered by the minute, stopped by the kill switch.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { jsonBody, setJsonBody } from "../routing/json-body.js";
import { type Handlers, startJob } from "../routing/handlers.js";
import { settleResource } from "../payments/index.js";
import { stopUpstream } from "../operators/actions/kill-switch.js";

/** Headers a sub-request carries from the client's: its credential and its request id, nothing else. */
function subrequestHeaders(c: Context<GatewayEnv>): Headers {
  const h = new Headers({ "content-type": "application/json" });
  for (const name of ["x-api-key", "authorization"]) {
    const v = c.req.header(name);
    if (v) h.set(name, v);
  }
  const id = c.get("requestId");
  if (id) h.set("x-request-id", `${id}.session`);
  return h;
}

/** Creates a session as the caller, through the gateway's own row; its id, or the refusal the caller would have had. */
async function createCallerSession(services: GatewayServices, c: Context<GatewayEnv>, options: unknown): Promise<string> {
  if (!services.dispatch) throw new GatewayError(503, "unavailable", "The gateway cannot create a session for this task now.");
  const origin = new URL(c.req.url).origin;
  const res = await services.dispatch(
    new Request(`${origin}/api/session`, { method: "POST", headers: subrequestHeaders(c), body: JSON.stringify(options ?? {}) }),
    c,
  );
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    // The session's refusal is the task's (quota, budget, scope), said as such.
    const message = typeof body.message === "string" ? body.message : `session creation answered ${res.status}`;
    const { message: _m, code, ...figures } = body;
    throw new GatewayError(
      res.status,
      typeof code === "string" ? code : "session_refused",
      `keepBrowserOpen starts a session of this tenant's, and it was refused: ${message}`,
      figures,
    );
  }
  if (typeof body.id !== "string" || !body.id)
    throw new GatewayError(502, "upstream_bad_response", "The upstream created a session without an id.");
  return body.id;
}

/** A session made for a task the upstream then refused: stopped, its minutes settled. */
async function abandon(services: GatewayServices, c: Context<GatewayEnv>, sessionId: string): Promise<void> {
  await stopUpstream(services, "session", sessionId);
  await services.stores.ownership.setActive("session", sessionId, false);
  await settleResource(services, "session", sessionId, c);
}

/**
 * Agent task starts: a task that asks to keep its browser open without naming one of the caller's sessions runs in a
 * session the gateway creates for the caller first, with the task's `sessionOptions`.
 */
export function nestedHandlers(services: GatewayServices): Handlers {
  return {
    "task.start": async (c, row) => {
      const body = (await jsonBody(c, services.platform)).json;
      if (body.keepBrowserOpen !== true || (typeof body.sessionId === "string" && body.sessionId)) return startJob(services, c, row);
      const sessionId = await createCallerSession(services, c, body.sessionOptions);
      // With several upstream accounts the task runs where its session was placed.
      const held = await services.upstream.accounts?.accountOf("session", sessionId);
      const placement = c.get("placement");
      if (held !== undefined && placement) c.set("placement", { ...placement, only: held });
      const { sessionOptions: _options, ...rest } = body;
      setJsonBody(c, { ...rest, sessionId });
      services.logger.info("task session created", { requestId: c.get("requestId"), route: row.name, session: sessionId });
      let res: Response;
      try {
        // The task's answer names the session it runs in (`sessionId`), so the client can reach its kept-open browser.
        res = await startJob(services, c, row, { sessionId });
      } catch (err) {
        await abandon(services, c, sessionId);
        throw err;
      }
      if (!res.ok) await abandon(services, c, sessionId);
      return res;
    },
  };
}
