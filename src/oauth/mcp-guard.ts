// What /mcp (src/mcp/endpoint.ts) asks of an OAuth access token: that the tools its grant left out stay out of the
// server it is answered by. That the token is for this resource (RFC 8707) and reaches the row at all is the identify
// step's one check, on every row (middleware/identify, tokenReaches).
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import { publicOriginOf } from "../web/public-origin.js";

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
