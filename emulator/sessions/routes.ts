// Control-plane routes of browser sessions: /api/session, /api/sessions and the computer-action endpoint.
import { Hono, type Context } from "hono";
import { presentedApiKey, requireApiKey } from "../auth.js";
import { verifySessionToken } from "./access-token.js";
import type { EmulatorContext } from "../types.js";
import { parseComputerAction } from "./computer-action-schema.js";
import { performComputerAction, type InputState } from "./computer-actions.js";
import { SessionError, respondWithError } from "./session-error.js";
import { SESSION_STATUSES, type BrowserSessions, type SessionRecord, type SessionStatus } from "./session-service.js";

async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new SessionError(400, "invalid_json", "Request body is not valid JSON");
  }
}

function positiveInt(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new SessionError(400, "invalid_params", `${name} must be an integer from 1 to ${max}`);
  return n;
}

export function sessionRoutes(ctx: EmulatorContext, sessions: BrowserSessions): Hono {
  const app = new Hono();
  const inputStates = new Map<string, InputState>();
  const actionQueues = new Map<string, Promise<unknown>>();
  sessions.onEnd((id) => {
    inputStates.delete(id);
    actionQueues.delete(id);
  });

  /** Sessions of the API-key team; paid x402 sessions are reached through /x402 only. */
  function teamSession(id: string): SessionRecord {
    const record = sessions.record(id);
    if (!record || record.owner !== undefined) throw new SessionError(404, "not_found", `Session ${id} not found`);
    return record;
  }

  const apiKey = requireApiKey(ctx);
  // Computer actions take the API key like every control call; paid x402 sessions, whose holders have no API key,
  // may present the session's own token as a Bearer instead.
  app.use("/api/session/*", async function sessionOrApiKey(c, next) {
    const match = /^\/api\/session\/([^/]+)\/computer-action$/.exec(c.req.path);
    const presented = presentedApiKey(c.req.raw.headers);
    if (match && presented && presented !== ctx.apiKey && (await verifySessionToken(ctx.tokenSecret, match[1], presented))) return next();
    return apiKey(c, next);
  });
  app.use("/api/session", requireApiKey(ctx));
  app.use("/api/sessions", requireApiKey(ctx));
  app.onError((err, c) => respondWithError(c, err));

  app.post("/api/session", async (c) => {
    const body = await jsonBody(c);
    if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body))) {
      throw new SessionError(400, "invalid_params", "Session parameters must be a JSON object");
    }
    return c.json(await sessions.create((body ?? {}) as Record<string, unknown>));
  });

  app.get("/api/sessions", (c) => {
    const statuses = c.req.queries("status") ?? [];
    for (const s of statuses) {
      if (!SESSION_STATUSES.includes(s as SessionStatus)) {
        throw new SessionError(400, "invalid_params", `status must be one of ${SESSION_STATUSES.join(", ")}`);
      }
    }
    const page = positiveInt(c.req.query("page"), "page", 1, 1_000_000);
    const perPage = positiveInt(c.req.query("limit"), "limit", 10, 100);
    const all = sessions.list({ statuses: statuses as SessionStatus[] });
    return c.json({ sessions: all.slice((page - 1) * perPage, page * perPage), totalCount: all.length, page, perPage });
  });

  app.get("/api/session/:id", (c) => c.json(sessions.get(teamSession(c.req.param("id")).id)!));

  app.put("/api/session/:id/stop", async (c) => {
    await sessions.stop(teamSession(c.req.param("id")).id);
    return c.json({ success: true });
  });

  app.post("/api/session/:id/computer-action", async (c) => {
    const id = c.req.param("id");
    const record = sessions.record(id);
    if (!record) throw new SessionError(404, "not_found", `Session ${id} not found`);
    const action = parseComputerAction(await jsonBody(c));
    const run = async () => {
      const pages = record.pages;
      if (record.status !== "active" || !pages) throw new SessionError(409, "session_not_active", `Session ${id} is ${record.status}`);
      const state = inputStates.get(id) ?? { x: 0, y: 0, buttons: 0 };
      inputStates.set(id, state);
      return performComputerAction(pages, state, action);
    };
    // One action at a time per session: a real mouse and keyboard cannot interleave.
    const result = (actionQueues.get(id) ?? Promise.resolve()).catch(() => {}).then(run);
    actionQueues.set(id, result);
    try {
      return c.json(await result);
    } catch (err) {
      if (err instanceof SessionError) throw err;
      const message = (err as Error).message;
      ctx.log("session.computer_action.failed", { id, action: action.action, error: message });
      return c.json({ success: false, error: message, message: `Computer action ${action.action} failed` });
    }
  });

  return app;
}
