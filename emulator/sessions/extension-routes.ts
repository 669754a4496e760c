// Control-plane routes of browser extensions: POST /api/extensions/add (multipart zip) and GET /api/extensions/list.
import { Hono } from "hono";
import { requireApiKey } from "../auth.js";
import type { EmulatorContext } from "../types.js";
import { MAX_EXTENSION_BYTES, type ExtensionStore } from "./extensions.js";
import { limitDeclaredLength } from "./request-params.js";
import { SessionError, respondWithError } from "./session-error.js";

export function extensionRoutes(ctx: EmulatorContext, extensions: ExtensionStore): Hono {
  const app = new Hono();
  app.use("/api/extensions/*", requireApiKey(ctx));
  app.onError((err, c) => respondWithError(c, err));

  app.post("/api/extensions/add", async (c) => {
    limitDeclaredLength(c, MAX_EXTENSION_BYTES, "Extensions");
    const form = await c.req.formData().catch(() => {
      throw new SessionError(400, "invalid_params", "Expected a multipart/form-data body with a file field");
    });
    const file = form.get("file");
    if (!file || typeof file === "string") throw new SessionError(400, "invalid_params", "file: a zip archive is required");
    const name = form.get("name");
    const extension = await extensions.add(
      new Uint8Array(await file.arrayBuffer()),
      file.name || "extension.zip",
      typeof name === "string" ? name : undefined,
    );
    return c.json(extensions.wire(extension));
  });

  // The current service's shape (the Python SDK requires it; the Node SDK's type says a bare array, its code passes either).
  app.get("/api/extensions/list", (c) => c.json({ extensions: extensions.list().map((e) => extensions.wire(e)) }));

  return app;
}
