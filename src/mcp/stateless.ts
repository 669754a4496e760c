// The stateless MCP revision (2026-07-28) on the same /mcp endpoint as 2025-06-18 and 2025-11-25: no initialize
// handshake, every request carries its protocol version in `_meta` (and the MCP-Protocol-Version header), the
// `server/discover` method says what the server speaks, results carry `resultType`, and the routing headers
// `Mcp-Method` and `Mcp-Name` must say what the body says (a proxy may route on them; a mismatch is refused, 400
// HeaderMismatch). The request itself is answered by the same SDK server as the older revisions, in memory.
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { jsonResponse } from "../errors.js";

const STATELESS_VERSION = "2026-07-28";
/** Every revision /mcp speaks, newest first (the SDK negotiates the two older ones in initialize). */
const MCP_VERSIONS = [STATELESS_VERSION, "2025-11-25", "2025-06-18"] as const;

const META_VERSION = "io.modelcontextprotocol/protocolVersion";
/** JSON-RPC error of a routing header that disagrees with the body (2026-07-28). */
const HEADER_MISMATCH = -32001;

type Message = { jsonrpc?: string; id?: string | number; method?: string; params?: Record<string, unknown> };

function metaVersion(message: unknown): unknown {
  if (!message || typeof message !== "object" || Array.isArray(message)) return undefined;
  const meta = (message as Message).params?._meta;
  return meta && typeof meta === "object" ? (meta as Record<string, unknown>)[META_VERSION] : undefined;
}

/** A message in the stateless revision: its MCP-Protocol-Version header or its `_meta` says 2026-07-28. */
export function isStateless(c: Context<GatewayEnv>, message: unknown): boolean {
  return c.req.header("mcp-protocol-version") === STATELESS_VERSION || metaVersion(message) === STATELESS_VERSION;
}

const rpcError = (status: number, id: unknown, code: number, message: string, data?: Record<string, unknown>) =>
  jsonResponse(status, { jsonrpc: "2.0", id: id ?? null, error: { code, message, ...(data ? { data } : {}) } });

/** The name a routing header carries for a method: a tool's or prompt's name, a resource's URI. */
function nameOf(m: Message): string | undefined {
  const p = m.params ?? {};
  if (m.method === "tools/call" || m.method === "prompts/get") return typeof p.name === "string" ? p.name : undefined;
  if (m.method?.startsWith("resources/")) return typeof p.uri === "string" ? p.uri : undefined;
  return undefined;
}

/** What server/discover answers: the revisions, the caller's capabilities, who this is. */
export interface Discovery {
  capabilities: Record<string, unknown>;
  serverInfo: { name: string; version: string };
  instructions?: string;
}

/**
 * Answers one 2026-07-28 message: the headers checked against the body, `server/discover` answered here, anything else
 * by `server` (its tools, as for the older revisions) with `resultType: "complete"` on its result.
 */
export async function answerStateless(
  c: Context<GatewayEnv>,
  message: unknown,
  server: McpServer,
  discovery: Discovery,
): Promise<Response> {
  if (!message || typeof message !== "object" || Array.isArray(message))
    return rpcError(400, null, -32600, `MCP ${STATELESS_VERSION} takes one JSON-RPC message per request, not a batch.`);
  const m = message as Message;
  if (typeof m.method !== "string") return rpcError(400, m.id, -32600, "Not a JSON-RPC request or notification.");
  const headerVersion = c.req.header("mcp-protocol-version");
  const bodyVersion = metaVersion(m);
  if (headerVersion !== undefined && bodyVersion !== undefined && headerVersion !== bodyVersion)
    return rpcError(
      400,
      m.id,
      HEADER_MISMATCH,
      `MCP-Protocol-Version (${headerVersion}) does not match _meta's (${String(bodyVersion)}).`,
      {
        header: "MCP-Protocol-Version",
      },
    );
  const method = c.req.header("mcp-method");
  if (method !== undefined && method !== m.method)
    return rpcError(400, m.id, HEADER_MISMATCH, `Mcp-Method (${method}) does not match the body's method (${m.method}).`, {
      header: "Mcp-Method",
    });
  const name = c.req.header("mcp-name");
  const bodyName = nameOf(m);
  if (name !== undefined && name !== bodyName)
    return rpcError(400, m.id, HEADER_MISMATCH, `Mcp-Name (${name}) does not match the body's (${bodyName ?? "none"}).`, {
      header: "Mcp-Name",
    });
  if (bodyName !== undefined && name === undefined && method !== undefined)
    return rpcError(400, m.id, HEADER_MISMATCH, `Mcp-Name is missing: the body names ${bodyName}.`, { header: "Mcp-Name" });

  if (m.method === "server/discover") {
    return jsonResponse(200, {
      jsonrpc: "2.0",
      id: m.id ?? null,
      result: { resultType: "complete", supportedVersions: [...MCP_VERSIONS], ...discovery },
    });
  }
  if (m.method === "initialize")
    return rpcError(400, m.id, -32600, `MCP ${STATELESS_VERSION} has no initialize: send server/discover, or any request with _meta.`);

  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const answer = new Promise<JSONRPCMessage | undefined>((resolve) => {
    client.onmessage = (reply) => {
      // Progress and other notifications have no place in a JSON answer: the reply to this request is what is sent.
      if ("id" in reply && reply.id === m.id && ("result" in reply || "error" in reply)) resolve(reply);
    };
    client.onclose = () => resolve(undefined);
  });
  await server.connect(serverSide);
  await client.start();
  await client.send(m as JSONRPCMessage);
  if (m.id === undefined) {
    await client.close();
    return new Response(null, { status: 202 });
  }
  const reply = await answer;
  await client.close();
  if (!reply) return rpcError(500, m.id, -32603, "The server ended without an answer.");
  if ("result" in reply) return jsonResponse(200, { ...reply, result: { resultType: "complete", ...reply.result } });
  return jsonResponse(200, reply);
}
