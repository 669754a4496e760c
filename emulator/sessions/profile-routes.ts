// Control-plane routes of browser profiles: /api/profile (create, get, delete, fork) and /api/profiles (paged list).
import { Hono } from "hono";
import { requireApiKey } from "../auth.js";
import type { EmulatorContext } from "../types.js";
import { readJsonObject, pageParam } from "./request-params.js";
import { SessionError, respondWithError } from "./session-error.js";
import type { BrowserSessions } from "./session-service.js";

export function profileRoutes(ctx: EmulatorContext, sessions: BrowserSessions): Hono {
  const app = new Hono();
  const profiles = sessions.stores.profiles;
  app.use("/api/profile", requireApiKey(ctx));
  app.use("/api/profile/*", requireApiKey(ctx));
  app.use("/api/profiles", requireApiKey(ctx));
  app.onError((err, c) => respondWithError(c, err));

  app.post("/api/profile", async (c) => {
    const body = await readJsonObject(c);
    const profile = await profiles.create(body.name);
    return c.json({ id: profile.id, name: profile.name });
  });

  app.get("/api/profile/:id", (c) => c.json(profiles.wire(profiles.get(c.req.param("id")))));

  app.delete("/api/profile/:id", async (c) => {
    const id = c.req.param("id");
    profiles.get(id);
    const users = sessions.list({ statuses: ["active"] }).filter((s) => sessions.record(s.id)?.params.profile?.id === id);
    if (users.length)
      throw new SessionError(409, "profile_in_use", `Profile ${id} is used by active session ${users.map((s) => s.id).join(", ")}`);
    await profiles.remove(id);
    return c.json({ success: true });
  });

  app.post("/api/profile/:id/fork", async (c) => {
    const body = await readJsonObject(c);
    const fork = await profiles.fork(c.req.param("id"), body.name);
    return c.json({ id: fork.id, name: fork.name });
  });

  app.get("/api/profiles", (c) => {
    const page = pageParam(c.req.query("page"), "page", 1, 1_000_000);
    const perPage = pageParam(c.req.query("limit"), "limit", 10, 100);
    const matching = profiles.list(c.req.query("name"));
    return c.json({
      profiles: matching.slice((page - 1) * perPage, page * perPage).map((p) => profiles.wire(p)),
      totalCount: matching.length,
      page,
      perPage,
    });
  });

  return app;
}
