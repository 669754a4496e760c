// MCP as hosts speak it: 2025-06-18, 2025-11-25 (the official client) and the stateless 2026-07-28 (server/discover,
// routing headers) on the one /mcp endpoint; tool input schemas closed at every level; a crawl run as an MCP task and
// polled to completion, owned and metered as the HTTP job is; the 401 challenge's shape.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { CallToolResultSchema, type CallToolResult, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

const SITE = "http://web.emulator.test";
const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];

let stack: SessionGateway;
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "acme", scopes: ALL, budget: { daily: "5.00" } },
      { id: "initech", scopes: ALL },
    ],
    { modules: ["sessions", "jobs", "sandboxes"] },
  );
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await stack?.close();
});

async function mint(tenant: string, body: Record<string, unknown>) {
  const r = await fetch(`${stack.gateway.url}/_tollgate/tokens`, {
    method: "POST",
    headers: { "x-api-key": stack.keys[tenant]!, "content-type": "application/json" },
    body: JSON.stringify({ kind: "mcp", ttlSeconds: 600, ...body }),
  });
  expect(r.status).toBe(201);
  return (await r.json()) as { token: string; jti: string };
}

/** The official client's transport, its initialize asking for `version` (the SDK itself asks for its latest). */
function transportAsking(credential: string, version?: string): StreamableHTTPClientTransport {
  const t = new StreamableHTTPClientTransport(new URL(`${stack.gateway.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${credential}` } },
  });
  if (version) {
    const send = t.send.bind(t);
    (t as Transport).send = (message: JSONRPCMessage, opts) => {
      if ("method" in message && message.method === "initialize")
        message = { ...message, params: { ...message.params, protocolVersion: version } } as JSONRPCMessage;
      return send(message, opts);
    };
  }
  return t;
}

async function connect(credential: string, version?: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: "mcp-protocol-test", version: "1.0.0" });
  const transport = transportAsking(credential, version);
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

const text = (r: CallToolResult) => JSON.parse((r.content.find((p) => p.type === "text") as { text: string }).text);

/** A 2026-07-28 request: no session, the version in _meta and the header, the routing headers. */
async function stateless(credential: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const name: Record<string, string> = typeof params.name === "string" ? { "mcp-name": params.name } : {};
  const r = await fetch(`${stack.gateway.url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${credential}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...name,
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
          "io.modelcontextprotocol/clientCapabilities": {},
        },
      },
    }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
}

describe("protocol versions on one endpoint", () => {
  it("2025-11-25: the official client initialises, lists and calls a tool", async () => {
    const { client, transport } = await connect(stack.keys.acme!);
    expect(transport.protocolVersion).toBe("2025-11-25");
    expect(client.getServerCapabilities()?.tasks).toBeTruthy();
    const r = (await client.callTool({ name: "budget", arguments: {} })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(text(r)).toHaveProperty("tenant");
  });

  it("2025-06-18: a client asking for it gets it, and calls a tool", async () => {
    const t = await mint("acme", { scopes: ["search"], cap: "0.10" });
    const { client, transport } = await connect(t.token, "2025-06-18");
    expect(transport.protocolVersion).toBe("2025-06-18");
    const r = (await client.callTool({ name: "budget", arguments: {} })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(text(r).token).toBeTruthy();
  });

  it("2026-07-28: server/discover, then tools/list and tools/call with no handshake; results carry resultType", async () => {
    const d = await stateless(stack.keys.acme!, "server/discover");
    expect(d.status).toBe(200);
    expect(d.body.result).toMatchObject({
      resultType: "complete",
      supportedVersions: ["2026-07-28", "2025-11-25", "2025-06-18"],
      serverInfo: { name: "tollgate" },
    });
    expect(d.body.result.capabilities).toHaveProperty("tools");
    const list = await stateless(stack.keys.acme!, "tools/list");
    expect(list.body.result.resultType).toBe("complete");
    expect(list.body.result.tools.map((t: { name: string }) => t.name)).toContain("crawl");
    const call = await stateless(stack.keys.acme!, "tools/call", { name: "budget", arguments: {} });
    expect(call.status).toBe(200);
    expect(call.body.result).toMatchObject({ resultType: "complete" });
    expect(JSON.parse(call.body.result.content[0].text)).toHaveProperty("tenant");
  });

  it("2026-07-28: routing headers that disagree with the body are refused, 400 HeaderMismatch", async () => {
    const wrongName = await stateless(stack.keys.acme!, "tools/call", { name: "budget", arguments: {} }, { "mcp-name": "web_search" });
    expect(wrongName.status).toBe(400);
    expect(wrongName.body.error).toMatchObject({ code: -32001, data: { header: "Mcp-Name" } });
    const wrongMethod = await stateless(stack.keys.acme!, "tools/list", {}, { "mcp-method": "tools/call" });
    expect(wrongMethod.body.error).toMatchObject({ code: -32001, data: { header: "Mcp-Method" } });
    const wrongVersion = await stateless(stack.keys.acme!, "tools/list", {}, { "mcp-protocol-version": "2025-11-25" });
    expect(wrongVersion.body.error).toMatchObject({ code: -32001, data: { header: "MCP-Protocol-Version" } });
  });
});

describe("tool input schemas", () => {
  it("every tool's inputSchema is closed: additionalProperties false on every object, at every depth", async () => {
    const { client } = await connect(stack.keys.acme!);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThanOrEqual(15);
    const open: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (!node || typeof node !== "object") return;
      if (Array.isArray(node)) {
        for (const [i, n] of node.entries()) walk(n, `${path}[${i}]`);
        return;
      }
      const n = node as Record<string, unknown>;
      if ((n.type === "object" || n.properties) && n.additionalProperties !== false) open.push(path);
      for (const [k, v] of Object.entries(n)) walk(v, `${path}.${k}`);
    };
    for (const t of tools) walk(t.inputSchema, t.name);
    expect(open).toEqual([]);
    // sandbox_create offers snapshotName.
    const create = tools.find((t) => t.name === "sandbox_create")!;
    expect(Object.keys(create.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["imageName", "snapshotName"]));
    // The long jobs say they may run as tasks.
    for (const name of ["crawl", "scrape", "extract", "agent_task"])
      expect(tools.find((t) => t.name === name)?.execution?.taskSupport).toBe("optional");
  });
});

describe("long jobs as MCP tasks", () => {
  it("a crawl runs as a task polled to completion, metered under the token's cap; another tenant's task id is not found", async () => {
    const t = await mint("acme", { scopes: ["jobs"], cap: "1.00" });
    const { client } = await connect(t.token);
    const seen: string[] = [];
    let taskId = "";
    let result: CallToolResult | undefined;
    const stream = client.experimental.tasks.callToolStream(
      { name: "crawl", arguments: { url: `${SITE}/products`, maxPages: 2 } },
      CallToolResultSchema,
      { task: { ttl: 60_000 }, timeout: 90_000 },
    );
    for await (const m of stream) {
      seen.push(m.type);
      if (m.type === "taskCreated") taskId = m.task.taskId;
      if (m.type === "result") result = m.result as CallToolResult;
      if (m.type === "error") throw m.error;
    }
    expect(seen[0]).toBe("taskCreated");
    expect(seen).toContain("taskStatus");
    expect(seen.at(-1)).toBe("result");
    expect(text(result!)).toMatchObject({ status: "completed", done: true });
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe("completed");
    expect((await client.experimental.tasks.listTasks()).tasks.map((x) => x.taskId)).toContain(taskId);
    // Metered as the HTTP job: reserved for maxPages under the token's cap, settled for the pages crawled.
    const budget = text((await client.callTool({ name: "budget", arguments: {} })) as CallToolResult);
    expect(Number(budget.token.spent)).toBeGreaterThan(0);
    expect(Number(budget.token.spent)).toBeLessThanOrEqual(0.002 + 1e-9);

    // initech cannot read, fetch the result of, or cancel acme's task; its list does not show it.
    const { client: other } = await connect(stack.keys.initech!);
    await expect(other.experimental.tasks.getTask(taskId)).rejects.toThrow(/not found/i);
    await expect(other.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/not found/i);
    await expect(other.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/not found/i);
    expect((await other.experimental.tasks.listTasks()).tasks.map((x) => x.taskId)).not.toContain(taskId);
    // A made-up id is not found either, never a 500.
    await expect(client.experimental.tasks.getTask("bm90LWEtdGFzaw")).rejects.toThrow(/not found/i);
  });

  it("an agent task runs as a task and can be cancelled", async () => {
    const { client } = await connect(stack.keys.acme!);
    const created = (await client.request(
      {
        method: "tools/call",
        params: { name: "agent_task", arguments: { task: `Open ${SITE}/about`, maxSteps: 3 }, task: { ttl: 60_000 } },
      },
      (
        await import("@modelcontextprotocol/sdk/types.js")
      ).CreateTaskResultSchema,
    )) as { task: { taskId: string; status: string } };
    expect(created.task.status).toBe("working");
    // The agent's task stops through its stop row (the emulator's agent takes seconds, so it is still working here).
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
    expect(cancelled.status).toBe("cancelled");
    await expect(client.experimental.tasks.cancelTask(created.task.taskId)).rejects.toThrow(/terminal/);
  });
});

describe("the 401 challenge", () => {
  const META = () => `${stack.gateway.url}/.well-known/oauth-protected-resource/mcp`;
  const SCOPE = 'scope="search jobs agents sessions sandboxes"';

  it("no credential: resource_metadata and scope, no error code (RFC 6750)", async () => {
    const r = await fetch(`${stack.gateway.url}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${META()}", ${SCOPE}`);
  });

  it("a revoked token: error=invalid_token, the gateway's code in error_description and in the body", async () => {
    const t = await mint("acme", { scopes: ["search"], cap: "0.10" });
    const del = await fetch(`${stack.gateway.url}/_tollgate/tokens/${t.jti}`, {
      method: "DELETE",
      headers: { "x-api-key": stack.keys.acme! },
    });
    expect(del.ok).toBe(true);
    const r = await fetch(`${stack.gateway.url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(r.status).toBe(401);
    const h = r.headers.get("www-authenticate")!;
    expect(h).toMatch(/^Bearer error="invalid_token", error_description="token_revoked: [^"]+", /);
    expect(h).toContain(`resource_metadata="${META()}"`);
    expect(h.endsWith(SCOPE)).toBe(true);
    expect(await r.json()).toMatchObject({ code: "token_revoked" });
    // A key that is not one: the same shape, its own code.
    const bad = await fetch(`${stack.gateway.url}/mcp`, { method: "POST", headers: { authorization: "Bearer tg_nope" }, body: "{}" });
    expect(bad.headers.get("www-authenticate")).toMatch(/^Bearer error="invalid_token", error_description="[a-z_]+: /);
  });
});
