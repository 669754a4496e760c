// Control-plane operations on one browser session beyond create/get/stop: snapshot, captcha evaluation, recordings,
// downloads, event logs, uploads, the active count, extending and updating a live session.
import { Hono } from "hono";
import { createHmac, timingSafeEqual } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, stat, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { Readable } from "node:stream";
import { requireApiKey } from "../auth.js";
import type { EmulatorContext } from "../types.js";
import { CAPTCHA_TYPES, evaluateCaptchas, type CaptchaType } from "./captcha-check.js";
import { writeZip } from "./zip-writer.js";
import { limitDeclaredLength, pageParam, readJsonObject, timestampParam } from "./request-params.js";
import { SessionError, respondWithError } from "./session-error.js";
import { MAX_TIMEOUT_MINUTES } from "./session-params.js";
import type { BrowserSessions, SessionRecord } from "./session-service.js";

/** Path of a session's downloads archive; like an object-store link it carries its own signature, not the API key. */
export const DOWNLOADS_PATH = "/session-downloads";

const UPDATE_TYPES = ["profile", "proxy", "screen", "solveCaptchas"] as const;
export const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;

function recordingUrl(enabled: boolean) {
  // Enabled or not, the emulator records nothing; asking for a recording it was told to make is a failed one.
  return enabled
    ? { status: "failed", recordingUrl: null, error: "The emulator does not record sessions" }
    : { status: "not_enabled", recordingUrl: null, error: null };
}

function screenSize(params: any): { width: number; height: number } {
  const ok = (v: unknown, min: number, max: number) => typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;
  if (!params || !ok(params.width, 200, 7680) || !ok(params.height, 200, 4320)) {
    throw new SessionError(400, "invalid_params", "params.width (200-7680) and params.height (200-4320) must be integers");
  }
  return { width: params.width, height: params.height };
}

export function sessionOperationRoutes(ctx: EmulatorContext, sessions: BrowserSessions): Hono {
  const app = new Hono();
  app.use("/api/session/*", requireApiKey(ctx));
  app.use("/api/sessions/*", requireApiKey(ctx));
  app.onError((err, c) => respondWithError(c, err));

  /** Sessions of the API-key team; paid x402 sessions are reached through /x402 only. */
  function teamSession(id: string): SessionRecord {
    const record = sessions.record(id);
    if (!record || record.owner !== undefined) throw new SessionError(404, "not_found", `Session ${id} not found`);
    return record;
  }
  function liveSession(id: string): SessionRecord & { pages: NonNullable<SessionRecord["pages"]> } {
    const record = teamSession(id);
    if (record.status !== "active" || !record.pages || record.ending)
      throw new SessionError(409, "session_not_active", `Session ${id} is ${record.status}`);
    return record as SessionRecord & { pages: NonNullable<SessionRecord["pages"]> };
  }

  const downloadsSignature = (id: string) => createHmac("sha256", ctx.tokenSecret).update(`session-downloads:${id}`).digest("base64url");

  app.get("/api/sessions/active-count", (c) => c.json({ activeSessionsCount: sessions.list({ statuses: ["active"] }).length }));

  app.post("/api/session/:id/snapshot", async (c) => {
    const record = liveSession(c.req.param("id"));
    const snap = await sessions.stores.snapshots.capture(record.id, record.userDataDir, record.pages.cdp);
    return c.json(sessions.stores.snapshots.wire(snap));
  });

  app.post("/api/session/:id/captcha/evaluate", async (c) => {
    const body = await readJsonObject(c);
    const captcha = body.captcha ?? body.captchaType ?? body.text;
    if (captcha !== undefined && !CAPTCHA_TYPES.includes(captcha))
      throw new SessionError(400, "invalid_params", `captcha must be one of ${CAPTCHA_TYPES.join(", ")}`);
    const iterations = body.iterations ?? body.maxIterations ?? 1;
    if (!Number.isInteger(iterations) || iterations < 1 || iterations > 20)
      throw new SessionError(400, "invalid_params", "iterations must be an integer from 1 to 20");
    const record = liveSession(c.req.param("id"));
    return c.json(await evaluateCaptchas(record.pages, record.events, { captcha: captcha as CaptchaType | undefined, iterations }));
  });

  app.get("/api/session/:id/recording", (c) => {
    teamSession(c.req.param("id"));
    return c.json([]);
  });
  app.get("/api/session/:id/recording-url", (c) => c.json(recordingUrl(teamSession(c.req.param("id")).params.enableWebRecording)));
  app.get("/api/session/:id/video-recording-url", (c) =>
    c.json(recordingUrl(teamSession(c.req.param("id")).params.enableVideoWebRecording)),
  );

  app.get("/api/session/:id/downloads-url", async (c) => {
    const record = teamSession(c.req.param("id"));
    if (!record.params.saveDownloads) return c.json({ status: "not_enabled", downloadsUrl: null, error: null });
    // As upstream, the archive exists once the session has ended; until then it is pending.
    if (record.status === "active") return c.json({ status: "pending", downloadsUrl: null, error: null });
    const archive = join(record.filesDir, "downloads.zip");
    if (!(await stat(archive).catch(() => undefined))) await writeZip(join(record.filesDir, "downloads"), archive);
    const downloadsUrl = `${ctx.controlOrigin()}${DOWNLOADS_PATH}/${record.id}.zip?sig=${downloadsSignature(record.id)}`;
    return c.json({ status: "completed", downloadsUrl, error: null });
  });

  app.get(`${DOWNLOADS_PATH}/:file{[A-Za-z0-9-]+\\.zip}`, async (c) => {
    const id = c.req.param("file").replace(/\.zip$/, "");
    const sig = Buffer.from(c.req.query("sig") ?? "");
    const expected = Buffer.from(downloadsSignature(id));
    if (sig.length !== expected.length || !timingSafeEqual(sig, expected))
      throw new SessionError(401, "unauthorized", "Invalid or missing download signature");
    const record = teamSession(id);
    const archive = join(record.filesDir, "downloads.zip");
    const st = await stat(archive).catch(() => undefined);
    if (!st) throw new SessionError(404, "not_found", `No downloads archive for session ${record.id}`);
    return new Response(Readable.toWeb(createReadStream(archive)) as ReadableStream, {
      headers: {
        "content-type": "application/zip",
        "content-length": String(st.size),
        "content-disposition": `attachment; filename="${record.id}-downloads.zip"`,
      },
    });
  });

  app.get("/api/session/:id/event-logs", (c) => {
    const record = teamSession(c.req.param("id"));
    return c.json(
      record.events.list({
        types: c.req.queries("types"),
        targetId: c.req.query("targetId") || undefined,
        startTimestamp: timestampParam(c.req.query("startTimestamp"), "startTimestamp"),
        endTimestamp: timestampParam(c.req.query("endTimestamp"), "endTimestamp"),
        page: pageParam(c.req.query("page"), "page", 1, 1_000_000),
        limit: pageParam(c.req.query("limit"), "limit", 50, 500),
      }),
    );
  });

  app.post("/api/session/:id/uploads", async (c) => {
    const record = liveSession(c.req.param("id"));
    limitDeclaredLength(c, MAX_UPLOAD_BYTES, "Uploads");
    const form = await c.req.formData().catch(() => {
      throw new SessionError(400, "invalid_params", "Expected a multipart/form-data body with a file field");
    });
    const file = form.get("file");
    if (!file || typeof file === "string") throw new SessionError(400, "invalid_params", "file: a file is required");
    if (file.size > MAX_UPLOAD_BYTES) throw new SessionError(413, "upload_too_large", `Uploads are limited to ${MAX_UPLOAD_BYTES} bytes`);
    const originalName = file.name || "upload";
    // Only a plain base name lands in the session's upload directory, whatever path the client sent.
    const fileName =
      basename(originalName)
        .replace(/^\.+/, "")
        .replace(/[^\w.\- ]/g, "_") || "upload";
    const dir = join(record.filesDir, "uploads");
    await mkdir(dir, { recursive: true });
    const filePath = join(dir, fileName);
    await writeFile(filePath, new Uint8Array(await file.arrayBuffer()));
    return c.json({ message: "File uploaded successfully", filePath, fileName, originalName });
  });

  app.put("/api/session/:id/extend-session", async (c) => {
    const body = await readJsonObject(c);
    const minutes = body.durationMinutes;
    if (typeof minutes !== "number" || !(minutes > 0) || minutes > MAX_TIMEOUT_MINUTES) {
      throw new SessionError(400, "invalid_params", `durationMinutes must be a number above 0 and at most ${MAX_TIMEOUT_MINUTES}`);
    }
    await sessions.extend(teamSession(c.req.param("id")), minutes);
    return c.json({ success: true });
  });

  app.put("/api/session/:id/update", async (c) => {
    const body = await readJsonObject(c);
    const type = body.type;
    if (!UPDATE_TYPES.includes(type)) throw new SessionError(400, "invalid_params", `type must be one of ${UPDATE_TYPES.join(", ")}`);
    const params = body.params ?? {};
    if (typeof params !== "object" || Array.isArray(params)) throw new SessionError(400, "invalid_params", "params must be an object");
    const record = liveSession(c.req.param("id"));
    switch (type as (typeof UPDATE_TYPES)[number]) {
      case "screen": {
        const size = screenSize(params);
        await record.pages.resize(size.width, size.height);
        record.live.screen = size;
        break;
      }
      case "profile": {
        if (!record.params.profile) throw new SessionError(400, "no_profile", `Session ${record.id} was not started with a profile`);
        if (params.persistChanges !== undefined && typeof params.persistChanges !== "boolean")
          throw new SessionError(400, "invalid_params", "params.persistChanges must be a boolean");
        if (params.persistChanges !== undefined) record.params.profile.persistChanges = params.persistChanges;
        break;
      }
      case "proxy": {
        if (typeof params.enabled !== "boolean") throw new SessionError(400, "invalid_params", "params.enabled must be a boolean");
        record.live.proxy = params.enabled ? { ...params } : null;
        break;
      }
      case "solveCaptchas": {
        const enabled = params.enabled !== false;
        sessions.setCaptchaSolving(record, enabled);
        record.updatedAt = new Date();
        return c.json({ success: true, solveCaptchas: enabled, sessionId: record.id, telemetryReady: false });
      }
    }
    record.updatedAt = new Date();
    return c.json({ success: true });
  });

  return app;
}
