// The MCP tools each scope offers (src/mcp/tools.ts), learned by registering them on a recorder: the consent page lets
// the tenant narrow a grant to some of them.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { MCP_SCOPES, type McpScope } from "../identity/tokens.js";
import type { GatewayCall } from "../mcp/call.js";
import { registerTools } from "../mcp/tools.js";

let known: Record<McpScope, string[]> | undefined;

/** Each scope's tools (budget, every caller's, left out). */
export function toolsByScope(): Record<McpScope, string[]> {
  if (known) return known;
  const out = {} as Record<McpScope, string[]>;
  for (const scope of MCP_SCOPES) {
    const names: string[] = [];
    const recorder = { registerTool: (name: string) => (names.push(name), { remove() {} }) } as unknown as McpServer;
    registerTools(recorder, { call: undefined as unknown as GatewayCall, scopes: [scope], pays: "credits", log: () => {} });
    out[scope] = names.filter((n) => n !== "budget");
  }
  known = out;
  return out;
}
