// Control-plane routes for sandbox volumes: /api/volume (create, list, get, delete by id or name).
import { Hono } from "hono";
import type { EmulatorContext } from "../types.js";
import { requireApiKey } from "../auth.js";
import { ApiError, badRequest, errorResponse } from "./errors.js";
import type { SandboxService } from "./registry.js";
import { body as jsonBody } from "./runtime-env.js";

function pageParam(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw badRequest(`${name} must be an integer from 1 to ${max}`);
  return n;
}

export function volumeRoutes(ctx: EmulatorContext, service: SandboxService): Hono {
  const app = new Hono();
  const volumes = service.volumes;
  app.onError((err) => {
    if (!(err instanceof ApiError)) ctx.log("sandbox.volumes.error", { error: String((err as Error)?.stack ?? err) });
    return errorResponse(err);
  });
  app.use("/api/volume", requireApiKey(ctx));
  app.use("/api/volume/*", requireApiKey(ctx));

  app.post("/api/volume", async (c) => c.json(await volumes.wire(await volumes.create(await jsonBody(c)))));

  app.get("/api/volume", async (c) => {
    const page = pageParam(c.req.query("page"), "page", 1, 1_000_000);
    const perPage = pageParam(c.req.query("limit"), "limit", 20, 100);
    const matching = volumes.list(c.req.query("search"));
    const slice = matching.slice((page - 1) * perPage, page * perPage);
    return c.json({ volumes: await Promise.all(slice.map((v) => volumes.wire(v))), totalCount: matching.length, page, perPage });
  });

  app.get("/api/volume/:id", async (c) => c.json(await volumes.wire(volumes.get(c.req.param("id")))));

  app.delete("/api/volume/:key", async (c) => {
    const volume = volumes.resolve(c.req.param("key"));
    const users = service.mountingVolume(volume.id);
    if (users.length)
      throw new ApiError(409, "volume_in_use", `Volume ${volume.id} is mounted by running sandbox ${users.map((s) => s.id).join(", ")}`);
    await volumes.remove(volume);
    return c.json({ deleted: true, id: volume.id, name: volume.name });
  });

  return app;
}
