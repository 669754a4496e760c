// Control-plane routes for sandboxes, images and snapshots under /api, as the upstream serves them.
import { Hono, type Context } from "hono";
import type { EmulatorContext } from "../types.js";
import { requireApiKey } from "../auth.js";
import { ApiError, badRequest, errorResponse } from "./errors.js";
import type { ImageCatalog } from "./images.js";
import type { SandboxService } from "./registry.js";
import { body } from "./runtime-env.js";

const jsonBody = body;

function paging(c: Context) {
  const page = Math.max(1, Number.parseInt(c.req.query("page") ?? "1", 10) || 1);
  const perPage = Math.min(100, Math.max(1, Number.parseInt(c.req.query("limit") ?? "20", 10) || 20));
  return { page, perPage, slice: <T>(items: T[]) => items.slice((page - 1) * perPage, page * perPage) };
}

export function sandboxControlRoutes(ctx: EmulatorContext, service: SandboxService, images: ImageCatalog): Hono {
  const app = new Hono();
  app.onError((err) => {
    if (!(err instanceof ApiError)) ctx.log("sandbox.control.error", { error: String((err as Error)?.stack ?? err) });
    return errorResponse(err);
  });
  app.use("/api/sandbox/*", requireApiKey(ctx));
  app.use("/api/sandbox", requireApiKey(ctx));
  app.use("/api/sandboxes", requireApiKey(ctx));
  app.use("/api/images", requireApiKey(ctx));
  app.use("/api/snapshots", requireApiKey(ctx));
  app.use("/api/snapshots/*", requireApiKey(ctx));

  app.post("/api/sandbox", async (c) => c.json(await service.detail(await service.create(await jsonBody(c)), true)));

  app.get("/api/sandboxes", async (c) => {
    const statuses = c.req.queries("status") ?? [];
    const search = c.req.query("search");
    const start = c.req.query("start") ? Number(c.req.query("start")) : undefined;
    const end = c.req.query("end") ? Number(c.req.query("end")) : undefined;
    const matching = service
      .all()
      .filter((sb) => !statuses.length || statuses.includes(sb.status))
      .filter((sb) => !search || sb.id.includes(search) || sb.spec.imageName.includes(search))
      .filter((sb) => start === undefined || sb.createdAt.getTime() >= start)
      .filter((sb) => end === undefined || sb.createdAt.getTime() <= end)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    const { page, perPage, slice } = paging(c);
    const sandboxes = await Promise.all(slice(matching).map((sb) => service.detail(sb, false)));
    return c.json({ sandboxes, totalCount: matching.length, page, perPage });
  });

  app.get("/api/sandbox/:id", async (c) => c.json(await service.detail(service.get(c.req.param("id")), true)));

  app.put("/api/sandbox/:id/stop", async (c) => {
    await service.stop(c.req.param("id"));
    return c.json({ success: true });
  });

  app.post("/api/sandbox/:id/snapshot", async (c) => {
    const sb = service.get(c.req.param("id"));
    sb.assertActive();
    const body = await jsonBody(c);
    const snap = await service.snapshots.capture(sb.rootDir, { ...sb.spec, snapshotName: body.snapshotName, sandboxId: sb.id });
    if (snap.status === "failed") throw new ApiError(500, "snapshot_failed", `Snapshot failed: ${String(snap.metadata.error)}`);
    return c.json({
      snapshotName: snap.snapshotName,
      snapshotId: snap.id,
      namespace: snap.namespace,
      status: snap.status,
      imageName: snap.imageName,
      imageId: snap.imageId,
      imageNamespace: snap.imageNamespace,
    });
  });

  app.post("/api/sandbox/:id/expose", async (c) => c.json(await service.expose(service.get(c.req.param("id")), await jsonBody(c))));
  app.post("/api/sandbox/:id/unexpose", async (c) => c.json(service.unexpose(service.get(c.req.param("id")), await jsonBody(c))));

  app.put("/api/sandbox/:id/network", async (c) => {
    const sb = service.get(c.req.param("id"));
    const body = await jsonBody(c);
    const net = sb.spec.network;
    if (body.allowInternetAccess !== undefined) net.allowInternetAccess = Boolean(body.allowInternetAccess);
    for (const key of ["allowOut", "denyOut"] as const) {
      if (body[key] === undefined) continue;
      if (!Array.isArray(body[key])) throw badRequest(`${key} must be an array of strings`);
      net[key] = body[key].map(String);
    }
    sb.updatedAt = new Date();
    await service.syncOutbound(sb);
    return c.json({ network: { ...net } });
  });

  app.get("/api/images", (c) => {
    const sources = c.req.queries("source") ?? [];
    const search = c.req.query("search");
    const matching = images.images.filter(
      (i) => (!sources.length || sources.includes(i.source)) && (!search || i.imageName.includes(search)),
    );
    const { page, perPage, slice } = paging(c);
    return c.json({ images: slice(matching).map((i) => images.wire(i)), totalCount: matching.length, page, perPage });
  });

  app.get("/api/snapshots", (c) => {
    const matching = service.snapshots.list({
      status: c.req.queries("status"),
      imageName: c.req.query("imageName"),
      search: c.req.query("search"),
    });
    const { page, perPage, slice } = paging(c);
    return c.json({ snapshots: slice(matching).map((s) => service.snapshots.wire(s)), totalCount: matching.length, page, perPage });
  });

  app.get("/api/snapshots/:idOrName", (c) => c.json({ snapshot: service.snapshots.wire(service.snapshots.get(c.req.param("idOrName"))) }));

  app.delete("/api/snapshots/:idOrName", async (c) => {
    await service.snapshots.remove(c.req.param("idOrName"));
    return c.json({ deleted: true });
  });

  return app;
}
