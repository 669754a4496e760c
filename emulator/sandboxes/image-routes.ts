// Control-plane routes for team images: deletion, image builds (and reuse), and the presigned uploads they hand out,
// which are served on the storage listener (a host of its own, as a real service's bucket is).
import { Hono } from "hono";
import { rm } from "node:fs/promises";
import type { EmulatorContext } from "../types.js";
import { requireApiKey } from "../auth.js";
import { ApiError, errorResponse, notFound } from "./errors.js";
import { MAX_UPLOAD_BYTES, UPLOAD_TTL_SECONDS, type ImageBuildStore } from "./image-builds.js";
import type { ImageCatalog } from "./images.js";
import { body as jsonBody } from "./runtime-env.js";
import type { TokenIssuer } from "./tokens.js";

/** Path of a build's presigned tarball upload, on the storage listener; like an object-store URL it carries its own credential. */
const IMAGE_UPLOAD_PATH = "/uploads/image-builds";
/** Path of a presigned blob upload (a context bundle, an image layer), by digest. */
const BLOB_UPLOAD_PATH = "/uploads/image-blobs";

/** The storage listener's routes: the presigned PUTs of build inputs. */
export function imageStorageRoutes(ctx: EmulatorContext, builds: ImageBuildStore, tokens: TokenIssuer): Hono {
  const app = new Hono();
  app.onError((err) => {
    if (!(err instanceof ApiError)) ctx.log("sandbox.images.storage.error", { error: String((err as Error)?.stack ?? err) });
    return errorResponse(err);
  });
  app.put(`${IMAGE_UPLOAD_PATH}/:id`, async (c) => {
    const id = c.req.param("id");
    await tokens.verify(c.req.query("token"), "image-upload", id);
    await builds.receiveUpload(id, c.req.raw.body);
    return c.body(null, 200);
  });
  app.put(`${BLOB_UPLOAD_PATH}/:sha256`, async (c) => {
    const sha = c.req.param("sha256");
    await tokens.verify(c.req.query("token"), "image-blob", sha);
    await builds.receiveBlob(sha, c.req.raw.body);
    return c.body(null, 200);
  });
  return app;
}

export function imageRoutes(ctx: EmulatorContext, images: ImageCatalog, builds: ImageBuildStore, tokens: TokenIssuer): Hono {
  const app = new Hono();
  app.onError((err) => {
    if (!(err instanceof ApiError)) ctx.log("sandbox.images.error", { error: String((err as Error)?.stack ?? err) });
    return errorResponse(err);
  });
  app.use("/api/images/*", requireApiKey(ctx));

  app.post("/api/images/builds", async (c) => {
    const build = builds.create(await jsonBody(c));
    // A tarball build uploads its one input (`upload`); a manifest build only the bundles or layers not stored yet.
    const uploads = [];
    for (const blob of await builds.missingBlobs(build.id)) {
      const { token } = await tokens.sign("image-blob", blob.sha256, UPLOAD_TTL_SECONDS);
      uploads.push({
        sha256: blob.sha256,
        url: `${ctx.storageOrigin()}${BLOB_UPLOAD_PATH}/${blob.sha256}?token=${encodeURIComponent(token)}`,
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
        objectKey: `blobs/sha256/${blob.sha256}`,
        expiresInSeconds: UPLOAD_TTL_SECONDS,
        maxUploadBytes: MAX_UPLOAD_BYTES,
      });
    }
    if (!builds.takesTarball(build.id)) return c.json({ build, uploads });
    const { token } = await tokens.sign("image-upload", build.id, UPLOAD_TTL_SECONDS);
    const upload = {
      url: `${ctx.storageOrigin()}${IMAGE_UPLOAD_PATH}/${build.id}?token=${encodeURIComponent(token)}`,
      method: "PUT",
      headers: { "content-type": "application/gzip" },
      objectKey: build.inputKey,
      expiresInSeconds: UPLOAD_TTL_SECONDS,
      maxUploadBytes: MAX_UPLOAD_BYTES,
    };
    return c.json({ build, upload, uploads });
  });

  // An exact image built before from this Docker image digest, under a new name: `{hit: true, build}`, else `{hit: false}`.
  app.post("/api/images/builds/reuse", async (c) => c.json(await builds.reuse(await jsonBody(c))));

  app.get("/api/images/builds", (c) => {
    const limit = c.req.query("limit");
    return c.json({ builds: builds.list({ status: c.req.query("status"), limit: limit === undefined ? undefined : Number(limit) }) });
  });
  app.get("/api/images/builds/:id", (c) => c.json({ build: builds.get(c.req.param("id")) }));
  app.post("/api/images/builds/:id/complete", async (c) => c.json({ build: await builds.complete(c.req.param("id"), await jsonBody(c)) }));
  app.post("/api/images/builds/:id/cancel", async (c) => c.json({ build: await builds.cancel(c.req.param("id")) }));

  app.delete("/api/images/:name", async (c) => {
    const name = c.req.param("name");
    const image = images.find(name);
    if (!image) throw notFound(`Image ${name}`);
    if (image.source === "public") throw new ApiError(403, "forbidden", `${name} is a public image and cannot be deleted`);
    images.remove(name);
    await rm(image.skeleton, { recursive: true, force: true }).catch(() => {});
    return c.json({ deleted: true, id: image.id, imageName: image.imageName, uploaded: image.uploaded });
  });

  return app;
}
