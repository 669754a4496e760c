// The remote MCP endpoint (`/mcp`, Streamable HTTP, stateless: any instance answers any message) and the protected
// resource metadata (RFC 9728) that tells an MCP client how to authenticate. The caller is a tenant key or a keyless
// MCP token (`Authorization: Bearer`); its tools run as requests through the route table (./call.ts).
import { StreamableHTTPTransport } from "@hono/mcp";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { Handlers } from "../routing/handlers.js";
import type { GatewayServices } from "../services.js";
import { MCP_SCOPES, type McpScope } from "../identity/tokens.js";
import { publicOriginOf } from "../web/public-origin.js";
import { jsonValue } from "../routing/json-body.js";
import { GatewayCall } from "./call.js";
import { answerStateless, isStateless } from "./stateless.js";
import { JobTaskStore, offerTasks } from "./tasks.js";
import { registerTools, taskTools } from "./tools.js";
import { authorizationServers, onlyGrantedTools } from "../oauth/mcp-guard.js";

/** One JSON-RPC message (or a batch): tool arguments included. A file written through MCP is at most 512 KiB. */
const MCP_BODY_LIMIT = 1024 * 1024;
/** Values in one tool call's arguments (the SDK counts them before validating). */
const MAX_ARGUMENT_ELEMENTS = 10_000;

const SERVER_INFO = { name: "tollgate", version: "1.0.0" };
/** Tools, and long jobs as tasks (2025-11-25 tasks utility: tools/call with `task`, tasks/get, result, list, cancel). */
const CAPABILITIES = { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };

interface McpCaller {
  credential: string;
  tenant: string;
  scopes: McpScope[];
}

/** The caller of /mcp as the chain identified it: a tenant key (its scopes, admin aside) or an MCP token (its scopes within its tenant's). */
function mcpCaller(c: Context<GatewayEnv>): McpCaller {
  const caller = c.get("caller");
  if (caller.via === "token")
    return {
      credential: caller.presented,
      tenant: caller.tenant.id,
      scopes: MCP_SCOPES.filter((s) => (caller.token.scopes as string[]).includes(s) && caller.tenant.scopes.includes(s)),
    };
  if (caller.via !== "key") throw new Error("mcp: the row's caller is a tenant key or an MCP token");
  return { credential: caller.presented, tenant: caller.tenant.id, scopes: MCP_SCOPES.filter((s) => caller.tenant.scopes.includes(s)) };
}

/** A refusal before any MCP message is read, as JSON-RPC (the MCP client reads it) with the gateway's code. */
function rpcError(status: number, rpcCode: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return jsonResponse(status, { jsonrpc: "2.0", id: null, error: { code: rpcCode, message, data: { code } } }, headers);
}

/**
 * The MCP rows (src/routing/own-rows.ts): the endpoint, whose caller the chain identified (a 401 carries the
 * `WWW-Authenticate` challenge naming the metadata), and the protected resource metadata.
 */
export function mcpHandlers(services: GatewayServices, paysX402: boolean): Handlers {
  // RFC 9728: the gateway's own authorization server (src/oauth/) issues the tokens, unless oauth.enabled is off (then
  // a tenant mints the bearer token, POST /_tollgate/tokens {"kind":"mcp"}, and hands it to the agent).
  const metadata = (c: Context<GatewayEnv>) =>
    c.json(
      {
        // RFC 9728 §3.3: the resource a metadata document is read from is the one it names: /mcp for
        // /.well-known/oauth-protected-resource/mcp, the gateway's origin (every token's audience too) for the root one.
        resource: c.req.path.endsWith("/mcp") ? `${publicOriginOf(c, services)}/mcp` : publicOriginOf(c, services),
        ...authorizationServers(c, services),
        resource_name: "Tollgate",
        bearer_methods_supported: ["header"],
        scopes_supported: [...MCP_SCOPES],
      },
      200,
      { "access-control-allow-origin": "*" },
    );

  async function endpoint(c: Context<GatewayEnv>): Promise<Response> {
    const caller = mcpCaller(c);
    // Stateless: no server-initiated stream to hold open, no session to end.
    if (c.req.method !== "POST")
      return rpcError(405, -32000, "method_not_allowed", "This MCP endpoint is stateless: send messages with POST.", { allow: "POST" });
    let message: unknown;
    try {
      message = await jsonValue(c, services.platform, MCP_BODY_LIMIT);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      return rpcError(err.status, err.status === 413 ? -32600 : -32700, err.code, err.message);
    }

    const call = new GatewayCall(services, c, caller.credential);
    const log = (error: string) =>
      services.logger.error("mcp tool failed", { requestId: c.get("requestId"), tenant: caller.tenant, error });
    // Long jobs may run as MCP tasks (./tasks.ts): the task is the job, read through its rows with this caller's credential.
    const tasks = new JobTaskStore(call, services.stores.kv, caller.tenant, services.now);
    const server = new McpServer(SERVER_INFO, {
      capabilities: CAPABILITIES,
      maxToolInputElements: MAX_ARGUMENT_ELEMENTS,
      taskStore: tasks,
    });
    onlyGrantedTools(server, c);
    registerTools(server, { call, scopes: caller.scopes, pays: paysX402 ? "x402" : "credits", log });
    // An OAuth grant's tools bound its tasks too (a tool it was not granted is not run as a task either).
    const who = c.get("caller");
    const granted = who.via === "token" ? who.token.tools : undefined;
    const taskable = Object.fromEntries(Object.entries(taskTools(caller.scopes)).filter(([name]) => !granted || granted.includes(name)));
    offerTasks(server, tasks, taskable, log);

    if (isStateless(c, message))
      return answerStateless(c, message, server, {
        capabilities: CAPABILITIES,
        serverInfo: SERVER_INFO,
      });
    const transport = new StreamableHTTPTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    try {
      return (await transport.handleRequest(c, message)) ?? c.body(null, 202);
    } catch (err) {
      if (err instanceof HTTPException) return err.getResponse();
      throw err;
    }
  }

  return { "mcp.metadata": metadata, mcp: endpoint };
}
