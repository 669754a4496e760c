// Agents through MCP: the official MCP client (Client + StreamableHTTPClientTransport) against /mcp on a Node gateway
// in front of the emulator. Every tool call is a request through the route table's row, so scopes, ownership, caps
// and the ledger hold for MCP exactly as for HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
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
    { modules: ["sessions", "jobs", "sandboxes", "x402"] },
  );
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await stack?.close();
});

async function connect(credential: string): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.gateway.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${credential}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function mint(tenant: string, body: Record<string, unknown>) {
  const r = await fetch(`${stack.gateway.url}/_tollgate/tokens`, {
    method: "POST",
    headers: { "x-api-key": stack.keys[tenant]!, "content-type": "application/json" },
    body: JSON.stringify({ kind: "mcp", ttlSeconds: 600, ...body }),
  });
  expect(r.status).toBe(201);
  return (await r.json()) as { token: string; jti: string; mcp: string };
}

const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: 90_000 }) as Promise<CallToolResult>;

/** A tool's JSON answer (or its error), as the agent reads it. */
function json(r: CallToolResult): Record<string, any> {
  const text = r.content.find((p) => p.type === "text");
  return JSON.parse((text as { text: string }).text);
}
function ok(r: CallToolResult): Record<string, any> {
  if (r.isError) throw new Error(`tool error: ${JSON.stringify(r.content)}`);
  return json(r);
}
function refused(r: CallToolResult): Record<string, any> {
  expect(r.isError).toBe(true);
  return json(r);
}

describe("the MCP endpoint", () => {
  it("answers 401 with the protected-resource metadata's address, and serves that metadata", async () => {
    const r = await fetch(`${stack.gateway.url}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${stack.gateway.url}/.well-known/oauth-protected-resource/mcp", scope="search jobs agents sessions sandboxes"`,
    );
    const meta = await (await fetch(`${stack.gateway.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(meta).toMatchObject({ resource: `${stack.gateway.url}/mcp`, bearer_methods_supported: ["header"] });
    expect(meta.scopes_supported).toEqual(expect.arrayContaining(ALL));
  });

  it("lists only the tools the caller's scopes allow", async () => {
    const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort();
    const all = await names(await connect(stack.keys.acme!));
    expect(all).toEqual(
      expect.arrayContaining(["budget", "web_search", "web_fetch", "scrape", "crawl", "extract", "agent_task", "job_result"]),
    );
    expect(all).toEqual(expect.arrayContaining(["browser_create", "browser_action", "browser_stop", "sandbox_create", "sandbox_exec"]));
    expect(all).toEqual(expect.arrayContaining(["sandbox_read_file", "sandbox_write_file", "sandbox_list_files", "sandbox_stop"]));
    const search = await mint("acme", { scopes: ["search"], cap: "0.10" });
    expect(await names(await connect(search.token))).toEqual(["budget", "web_fetch", "web_search"]);
    const boxes = await mint("acme", { scopes: ["sandboxes"], cap: "0.10" });
    expect(await names(await connect(boxes.token))).toEqual([
      "budget",
      "sandbox_create",
      "sandbox_exec",
      "sandbox_list_files",
      "sandbox_read_file",
      "sandbox_stop",
      "sandbox_write_file",
    ]);
    // Every tool carries a description and a JSON schema for its arguments.
    for (const t of (await (await connect(stack.keys.acme!)).listTools()).tools) {
      expect(t.description?.length).toBeGreaterThan(20);
      expect(t.inputSchema.type).toBe("object");
    }
  });

  it("an MCP token is the same credential over plain HTTP: its scopes and cap, never a key's powers", async () => {
    const t = await mint("acme", { scopes: ["search"], cap: "0.10" });
    const h = { authorization: `Bearer ${t.token}`, "content-type": "application/json" };
    const sandbox = await fetch(`${stack.gateway.url}/api/sandbox`, {
      method: "POST",
      headers: h,
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(sandbox.status).toBe(403);
    expect(await sandbox.json()).toMatchObject({ code: "token_scope", requiredScope: "sandboxes" });
    const again = await fetch(`${stack.gateway.url}/_tollgate/tokens`, {
      method: "POST",
      headers: h,
      body: JSON.stringify({ kind: "mcp", scopes: ["search"], cap: "1" }),
    });
    expect(again.status).toBe(403);
    // A search token is not an MCP credential; a tenant cannot hand out scopes it lacks.
    const search = await (
      await fetch(`${stack.gateway.url}/_tollgate/tokens`, {
        method: "POST",
        headers: { "x-api-key": stack.keys.acme!, "content-type": "application/json" },
        body: JSON.stringify({ kind: "search", cap: "0.01" }),
      })
    ).json();
    const r = await fetch(`${stack.gateway.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${search.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: "{}",
    });
    expect(r.status).toBe(403);
    const admin = await fetch(`${stack.gateway.url}/_tollgate/tokens`, {
      method: "POST",
      headers: { "x-api-key": stack.keys.acme!, "content-type": "application/json" },
      body: JSON.stringify({ kind: "mcp", scopes: ["admin"], cap: "1" }),
    });
    expect(admin.status).toBe(400);
  });

  it("a capped token's searches stop at its cap with token_cap_exceeded, and the ledger holds exactly what was spent", async () => {
    const t = await mint("acme", { scopes: ["search"], cap: "0.012" });
    const c = await connect(t.token);
    const first = ok(await call(c, "web_search", { query: "mcp capped one" }));
    expect(JSON.stringify(first)).toContain("mcp capped one".split(" ")[0]);
    ok(await call(c, "web_search", { query: "mcp capped two" }));
    const third = refused(await call(c, "web_search", { query: "mcp capped three" }));
    expect(third).toMatchObject({ code: "token_cap_exceeded", status: 402, limit: "0.012", spent: "0.01", price: "0.005" });
    const budget = ok(await call(c, "budget"));
    expect(budget.token).toMatchObject({ cap: "0.012", spent: "0.01", remaining: "0.002" });
    // The tenant's ledger: exactly two committed credit entries under the token's cap, none for the refused call.
    const ledger = await (
      await fetch(`${stack.gateway.url}/_tollgate/ledger?kind=credits&limit=1000`, { headers: { "x-api-key": stack.keys.acme! } })
    ).json();
    const searches = ledger.entries.filter((e: any) => e.route === "web.search");
    expect(searches.filter((e: any) => e.state === "committed").map((e: any) => e.amountUsd)).toEqual(["0.005", "0.005"]);
    expect(searches.filter((e: any) => e.state === "reserved")).toHaveLength(0);
    // A fetch the cap can still take (0.001) goes through; the token never reaches tools outside its scopes.
    ok(await call(c, "web_fetch", { url: `${SITE}/about` }));
    const outside = await call(c, "scrape", { url: `${SITE}/about` });
    expect(outside.isError).toBe(true);
    expect(JSON.stringify(outside.content)).toMatch(/Tool scrape not found/);
  });

  it("a job whose reservation would pass the token's cap is refused before it starts, nothing held", async () => {
    const t = await mint("acme", { scopes: ["jobs"], cap: "0.005" });
    const c = await connect(t.token);
    // A crawl reserves maxPages × crawlPage (10 × 0.001) before it is forwarded: more than the cap.
    const r = refused(await call(c, "crawl", { url: `${SITE}/products`, maxPages: 10 }));
    expect(r).toMatchObject({ code: "token_cap_exceeded", status: 402, limit: "0.005", spent: "0.00", price: "0.01" });
    expect(ok(await call(c, "budget")).token).toMatchObject({ spent: "0.00", remaining: "0.005" });
    const scraped = ok(await call(c, "scrape", { url: `${SITE}/about` }));
    expect(scraped.status).toBe("completed");
    expect(ok(await call(c, "budget")).token).toMatchObject({ spent: "0.001", remaining: "0.004" });
  });

  it("scrape, extract and job_result run through their rows; a crawl reports progress while it runs", async () => {
    const c = await connect(stack.keys.acme!);
    const scraped = ok(await call(c, "scrape", { url: `${SITE}/about`, scrapeOptions: { formats: ["markdown"] } }));
    expect(scraped.status).toBe("completed");
    expect(JSON.stringify(scraped.data)).toContain("About");
    const extracted = ok(
      await call(c, "extract", {
        urls: [`${SITE}/about`],
        schema: JSON.stringify({ type: "object", properties: { title: { type: "string" } } }),
      }),
    );
    expect(extracted.status).toBe("completed");
    const progress: Array<{ progress: number; message?: string }> = [];
    const crawled = (await c.callTool(
      { name: "crawl", arguments: { url: `${SITE}/products`, maxPages: 2, scrapeOptions: { waitFor: 700 } } },
      undefined,
      { timeout: 90_000, onprogress: (p) => progress.push(p) },
    )) as CallToolResult;
    const crawl = ok(crawled);
    expect(crawl.status).toBe("completed");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.some((p) => /pending|running/.test(p.message ?? ""))).toBe(true);
    expect(progress.every((p) => p.message?.startsWith(crawl.jobId))).toBe(true);
    expect(ok(await call(c, "job_result", { family: "crawl", jobId: crawl.jobId })).status).toBe("completed");
    // The job is acme's: another tenant's job_result is refused as not found.
    const other = await connect(stack.keys.initech!);
    expect(refused(await call(other, "job_result", { family: "crawl", jobId: crawl.jobId }))).toMatchObject({
      code: "not_found",
      status: 404,
    });
  });

  it("agent_task starts a task and waits for it", async () => {
    const c = await connect(stack.keys.acme!);
    const r = ok(await call(c, "agent_task", { task: `Open ${SITE}/about and read the title`, maxSteps: 3 }));
    expect(r.done).toBe(true);
    expect(["completed", "failed", "stopped"]).toContain(r.status);
  });

  it("browser sessions: create with a gateway CDP URL, a screenshot as image content, stop; another tenant's id refused", async () => {
    const c = await connect(stack.keys.acme!);
    const s = ok(await call(c, "browser_create", { timeoutMinutes: 5 }));
    expect(s.wsEndpoint).toMatch(new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/devtools/browser/${s.id}`));
    const shot = await call(c, "browser_action", { sessionId: s.id, action: "screenshot" });
    expect(shot.isError).toBeFalsy();
    const image = shot.content.find((p) => p.type === "image") as { data: string; mimeType: string };
    expect(image.mimeType).toBe("image/png");
    expect(Buffer.from(image.data, "base64").subarray(1, 4).toString()).toBe("PNG");
    const other = await connect(stack.keys.initech!);
    expect(refused(await call(other, "browser_action", { sessionId: s.id, action: "screenshot" }))).toMatchObject({
      code: "not_found",
      status: 404,
    });
    expect(refused(await call(other, "browser_stop", { sessionId: s.id }))).toMatchObject({ code: "not_found" });
    ok(await call(c, "browser_stop", { sessionId: s.id }));
  });

  it("sandboxes: create, write, read, list, exec, stop; another tenant's sandbox id refused", async () => {
    const t = await mint("acme", { scopes: ["sandboxes"], cap: "1.00" });
    const c = await connect(t.token);
    const sb = ok(await call(c, "sandbox_create", { imageName: "node", timeoutMinutes: 5 }));
    expect(sb.id).toBeTruthy();
    ok(await call(c, "sandbox_write_file", { sandboxId: sb.id, path: "/tmp/mcp.txt", content: "hello from mcp" }));
    const read = ok(await call(c, "sandbox_read_file", { sandboxId: sb.id, path: "/tmp/mcp.txt" }));
    expect(read.content).toBe("hello from mcp");
    const listed = ok(await call(c, "sandbox_list_files", { sandboxId: sb.id, path: "/tmp" }));
    expect(listed.entries.map((e: any) => e.name)).toContain("mcp.txt");
    const run = ok(await call(c, "sandbox_exec", { sandboxId: sb.id, command: "cat /tmp/mcp.txt && echo done" }));
    expect(run.result).toMatchObject({ exit_code: 0 });
    expect(run.result.stdout).toContain("hello from mcp");
    const other = await connect(stack.keys.initech!);
    for (const [tool, args] of [
      ["sandbox_exec", { command: "id" }],
      ["sandbox_read_file", { path: "/tmp/mcp.txt" }],
      ["sandbox_stop", {}],
    ] as const)
      expect(refused(await call(other, tool, { sandboxId: sb.id, ...args }))).toMatchObject({ code: "not_found", status: 404 });
    ok(await call(c, "sandbox_stop", { sandboxId: sb.id }));
    // The sandbox's minutes were reserved under the token's cap and settled at the stop.
    const budget = ok(await call(c, "budget"));
    expect(Number(budget.token.spent)).toBeGreaterThan(0);
    expect(Number(budget.token.spent)).toBeLessThan(0.0017 * 5 + 1e-9);
  });

  it("bad input is an MCP error, never a 500: unknown tool, bad arguments, unknown fields, oversized arguments", async () => {
    const c = await connect(stack.keys.acme!);
    const unknown = await call(c, "no_such_tool");
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(unknown.content)).toMatch(/Tool no_such_tool not found/);
    const bad = await call(c, "web_search", { query: 42 });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toMatch(/validation/i);
    // Arguments are closed objects: a field the tool does not name is refused before anything is sent.
    const sneaky = await call(c, "web_search", { query: "x", sneaky: 1 });
    expect(sneaky.isError).toBe(true);
    expect(JSON.stringify(sneaky.content)).toMatch(/validation/i);
    const zero = await call(c, "crawl", { url: `${SITE}/`, maxPages: 0 });
    expect(zero.isError).toBe(true);
    expect(refused(await call(c, "extract", { urls: [`${SITE}/`], schema: "{not json" }))).toMatchObject({ status: 400, field: "schema" });
    await expect(call(c, "sandbox_write_file", { sandboxId: "x", path: "/a", content: "x".repeat(2 * 1024 * 1024) })).rejects.toThrow(
      /body_too_large/,
    );
    // The session goes on after each of them.
    ok(await call(c, "budget"));
    // Raw messages that are not JSON-RPC get JSON-RPC errors with a 4xx.
    const raw = await fetch(`${stack.gateway.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${stack.keys.acme}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: "{not json",
    });
    expect(raw.status).toBe(400);
    expect((await raw.json()).error.code).toBe(-32700);
    expect(stack.logs.filter((l) => l.includes('"unhandled"'))).toEqual([]);
  });
});
