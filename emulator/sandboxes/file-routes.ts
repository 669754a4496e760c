// Runtime routes for files: stat/list/read/write, streamed upload/download, fs operations, watches, presigned URLs.
import { Hono } from "hono";
import { Readable } from "node:stream";
import { ReadableStream as NodeReadableStream } from "node:stream/web";
import { ApiError, badRequest } from "./errors.js";
import { resolveUser } from "./processes.js";
import { body, type RuntimeContext, type RuntimeEnv } from "./runtime-env.js";
import type { Sandbox } from "./sandbox.js";
import type { TokenIssuer } from "./tokens.js";

const DEFAULT_PRESIGN_SECONDS = 300;
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

/** The request body as a Node stream, read straight off the socket (never buffered whole). */
function requestStream(c: RuntimeContext): Readable {
  const incoming = c.env?.incoming;
  if (incoming && !incoming.readableDidRead) return incoming as unknown as Readable;
  const web = c.req.raw.body;
  return web ? Readable.fromWeb(web as any) : Readable.from([]);
}

async function upload(c: RuntimeContext, sb: Sandbox, path: string | undefined, runAs: unknown) {
  if (!path) throw badRequest("path is required");
  const agent = await sb.agent(resolveUser(runAs));
  return c.json(await agent.upload(path, requestStream(c)));
}

async function download(sb: Sandbox, path: string | undefined, runAs: unknown): Promise<Response> {
  if (!path) throw badRequest("path is required");
  const agent = await sb.agent(resolveUser(runAs));
  const { size, stream } = await agent.download(path);
  return new Response(NodeReadableStream.from(stream) as unknown as ReadableStream, {
    headers: { "content-type": "application/octet-stream", "content-length": String(size) },
  });
}

export function fileRoutes(tokens: TokenIssuer, runtimeOrigin: () => string) {
  const app = new Hono<RuntimeEnv>();
  const usedPresigns = new Set<string>();
  const agentFor = (c: RuntimeContext, runAs: unknown) => c.var.sandbox.agent(resolveUser(runAs));
  const simple = (op: string) => async (c: RuntimeContext) => {
    const b = await body(c);
    return c.json(await (await agentFor(c, b.runAs)).call(op, b));
  };

  app.get("/files/stat", async (c) => c.json(await (await agentFor(c, c.req.query("runAs"))).call("stat", { path: c.req.query("path") })));
  app.get("/files", async (c) => {
    const depth = Number(c.req.query("depth") ?? "1");
    if (!Number.isInteger(depth) || depth < 1) throw badRequest("depth must be an integer >= 1");
    return c.json(await (await agentFor(c, c.req.query("runAs"))).call("list", { path: c.req.query("path"), depth }));
  });
  app.post("/files/read", simple("read"));
  app.post("/files/write", async (c) => {
    const b = await body(c);
    const files = Array.isArray(b.files) ? b.files : [b];
    for (const f of files)
      if (!f || typeof f.path !== "string" || typeof f.data !== "string") throw badRequest("each file needs a path and string data");
    return c.json(await (await agentFor(c, b.runAs)).call("write", { files }));
  });
  for (const op of ["mkdir", "move", "delete", "copy", "chmod", "chown"]) app.post(`/files/${op}`, simple(op));

  app.put("/files/upload", (c) => upload(c, c.var.sandbox, c.req.query("path"), c.req.query("runAs")));
  app.get("/files/download", (c) => download(c.var.sandbox, c.req.query("path"), c.req.query("runAs")));

  app.post("/files/watch", async (c) => {
    const b = await body(c);
    const agent = await agentFor(c, b.runAs);
    const watch = await c.var.sandbox.watches.start(agent, String(b.path ?? ""), Boolean(b.recursive));
    return c.json({ watch: { ...watch.wire(), path: watch.path } });
  });
  app.delete("/files/watch/:wid", (c) => {
    c.var.sandbox.watches.get(c.req.param("wid")).end();
    return c.json({ success: true });
  });

  for (const [route, method] of [
    ["presign-upload", "PUT"],
    ["presign-download", "GET"],
  ] as const) {
    app.post(`/files/${route}`, async (c) => {
      const b = await body(c);
      if (typeof b.path !== "string" || !b.path) throw badRequest("path is required");
      resolveUser(b.runAs);
      const seconds = b.expiresInSeconds === undefined ? DEFAULT_PRESIGN_SECONDS : Number(b.expiresInSeconds);
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_PRESIGN_SECONDS)
        throw badRequest(`expiresInSeconds must be between 1 and ${MAX_PRESIGN_SECONDS}`);
      const sb = c.var.sandbox;
      const { token, expiresAt } = await tokens.sign("presign", sb.id, seconds, {
        path: b.path,
        method,
        oneTime: Boolean(b.oneTime),
        runAs: b.runAs ?? null,
      });
      const url = `${runtimeOrigin()}/sandbox/${sb.id}/files/presigned?token=${encodeURIComponent(token)}`;
      return c.json({ token, path: b.path, method, expiresAt, url });
    });
  }

  return Object.assign(app, {
    /** Serves a presigned URL (no Authorization header: the token in the URL is the credential). */
    async presigned(c: RuntimeContext, sb: Sandbox) {
      const claims = await tokens.verify(c.req.query("token"), "presign", sb.id);
      if (claims.method !== c.req.method) throw new ApiError(405, "method_not_allowed", `This URL accepts ${String(claims.method)} only`);
      if (claims.oneTime) {
        if (usedPresigns.has(claims.jti!)) throw new ApiError(401, "token_used", "This one-time URL was already used");
        usedPresigns.add(claims.jti!);
      }
      sb.assertActive();
      return claims.method === "PUT" ? upload(c, sb, String(claims.path), claims.runAs) : download(sb, String(claims.path), claims.runAs);
    },
  });
}
