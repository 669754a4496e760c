// What /mcp (src/mcp/endpoint.ts) asks of an OAuth access token: that it is for this resource (RFC 8707), and that the
// tools its grant left out stay out of the server it is answered by.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { publicOriginOf } from "../web/public-origin.js";

/** An OAuth access token is for one resource (RFC 8707): this endpoint, or the gateway as a whole. */
export function requireAudience(c: Context<GatewayEnv>, services: GatewayServices): void {
  const caller = c.get("caller");
  const aud = caller.via === "token" ? caller.token.aud : undefined;
  if (aud === undefined) return;
  const origin = publicOriginOf(c, services);
  if (aud === `${origin}/mcp` || aud === origin || aud === `${origin}/`) return;
  throw new GatewayError(401, "token_audience", `This token was issued for ${aud}, not for this endpoint.`, undefined, {
    "www-authenticate": `Bearer error="invalid_token", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
  });
}

/** An OAuth grant that allows some of its scopes' tools only: the others are left out of this server as they register. */
export function onlyGrantedTools(server: McpServer, c: Context<GatewayEnv>): void {
  const caller = c.get("caller");
  const allowed = caller.via === "token" ? caller.token.tools : undefined;
  if (!allowed) return;
  const register = server.registerTool.bind(server) as (...args: unknown[]) => { remove(): void };
  server.registerTool = ((name: string, ...rest: unknown[]) => {
    const tool = register(name, ...rest);
    if (name !== "budget" && !allowed.includes(name)) tool.remove();
    return tool;
  }) as typeof server.registerTool;
}

/** RFC 9728's `authorization_servers` for /mcp's metadata: the gateway itself, unless oauth.enabled is off. */
export function authorizationServers(c: Context<GatewayEnv>, services: GatewayServices): { authorization_servers?: string[] } {
  return services.config.oauth.enabled ? { authorization_servers: [publicOriginOf(c, services)] } : {};
}
