// The runtime plane at /sandbox/<id>/...: token check, then processes, files and terminals; exposed ports by Host (or
// by x-tollgate-port-host, for a client that cannot set Host).
import { Hono, type MiddlewareHandler } from "hono";
import type { EmulatorContext } from "../types.js";
import { ApiError, errorResponse } from "./errors.js";
import { fileRoutes } from "./file-routes.js";
import { exposedTarget, PORT_HOST_HEADER, type PortRouter } from "./ports.js";
import { processRoutes } from "./process-routes.js";
import type { SandboxService } from "./registry.js";
import type { RuntimeEnv } from "./runtime-env.js";
import { terminalRoutes } from "./terminal-routes.js";
import { bearer, type TokenIssuer } from "./tokens.js";

/** Bearer runtime token for this very sandbox, and the sandbox must still run. */
function requireRuntimeToken(service: SandboxService, tokens: TokenIssuer): MiddlewareHandler<RuntimeEnv> {
  return async function requireRuntimeToken(c, next) {
    const sb = service.get(c.req.param("id") ?? "");
    await tokens.verify(bearer(c.req.raw.headers), "runtime", sb.id);
    sb.assertActive();
    c.set("sandbox", sb);
    await next();
  };
}

export function sandboxRuntimeRoutes(
  ctx: EmulatorContext,
  service: SandboxService,
  tokens: TokenIssuer,
  ports: PortRouter,
): Hono<RuntimeEnv> {
  const app = new Hono<RuntimeEnv>();
  app.onError((err) => {
    if (!(err instanceof ApiError)) ctx.log("sandbox.runtime.error", { error: String((err as Error)?.stack ?? err) });
    return errorResponse(err);
  });
  app.use("*", async function exposedPorts(c, next) {
    const target = exposedTarget(c.req.header(PORT_HOST_HEADER), c.req.header("host"));
    if (target) return ports.http(c, target);
    await next();
  });
  const files = fileRoutes(tokens, () => service.runtimeOrigin());
  app.on(["GET", "PUT"], "/sandbox/:id/files/presigned", (c) => files.presigned(c, service.get(c.req.param("id"))));
  const auth = requireRuntimeToken(service, tokens);
  app.use("/sandbox/:id/*", async (c, next) => (c.req.path.endsWith("/files/presigned") ? next() : auth(c, next)));
  app.route("/sandbox/:id", processRoutes());
  app.route("/sandbox/:id", files);
  app.route("/sandbox/:id", terminalRoutes());
  app.all("/sandbox/:id/*", () => {
    throw new ApiError(404, "not_found", "Unknown runtime endpoint (not found)");
  });
  return app;
}
