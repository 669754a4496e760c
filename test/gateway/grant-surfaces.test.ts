// One check of what a token was issued for, on every surface (issue 53): an OAuth grant's audience, scopes and tool
// choice hold over plain HTTP as through /mcp, because an MCP tool call is a request through the same route row and
// the identify step checks the token on every row (middleware/identify, src/routing/tool-rows.ts). The grant is made
// with the official MCP TypeScript client's OAuth flow (its OAuthClientProvider) against a Node gateway in front of the
// emulator; its access token is then presented over plain HTTP as an SDK would.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { type ConsentChoices, consentForm, listToolsAs, MemoryOAuthProvider, postForm } from "../helpers/mcp-oauth.js";
import { ROUTES } from "../../src/routing/table.js";
import { TOOL_ROWS, toolsReach } from "../../src/routing/tool-rows.js";
import { toolsByScope } from "../../src/oauth/tools.js";

const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];
let stack: SessionGateway;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startSessionGateway([{ id: "acme", scopes: ALL }], { modules: ["sessions", "jobs", "x402"] });
  base = stack.gateway.url;
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await stack?.close();
});

/** The MCP SDK's OAuth flow to the end: 401 → discovery → registration → consent (posted as a browser would) → tokens. */
async function grant(choices: ConsentChoices): Promise<{ client: Client; token: string }> {
  const provider = new MemoryOAuthProvider("Surfaces Agent");
  const url = new URL(`${base}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await expect(new Client({ name: "surfaces", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const page = await fetch(provider.authUrl!, { redirect: "manual" });
  const back = await postForm(fetch, `${base}/authorize`, consentForm(await page.text(), choices));
  expect(back.status).toBe(302);
  await first.finishAuth(new URL(back.headers.get("location")!).searchParams.get("code")!);
  const client = new Client({ name: "surfaces", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  clients.push(client);
  return { client, token: provider.saved!.access_token };
}

const http = (token: string, method: string, path: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe("a grant's tool choice on every surface", () => {
  it("a grant allowing only web_search: the search works over MCP and HTTP; crawl, scrape, fetch and extract are 403 on both", async () => {
    const { client, token } = await grant({ credential: stack.keys.acme!, scopes: ["search", "jobs"], tools: ["web_search"] });
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["budget", "web_search"]);
    const viaMcp = (await client.callTool({ name: "web_search", arguments: { query: "tollgate" } })) as CallToolResult;
    expect(viaMcp.isError, JSON.stringify(viaMcp.content)).toBeFalsy();

    const search = await http(token, "POST", "/api/web/search", { query: "tollgate" });
    expect(search.status, await search.clone().text()).toBe(200);
    for (const [path, body] of [
      ["/api/crawl", { url: "http://web.emulator.test/" }],
      ["/api/scrape", { url: "http://web.emulator.test/" }],
      ["/api/extract", { urls: ["http://web.emulator.test/"], prompt: "x" }],
      ["/api/web/fetch", { url: "http://web.emulator.test/" }],
    ] as const) {
      const r = await http(token, "POST", path, body);
      expect(r.status, path).toBe(403);
      expect(await r.json(), path).toMatchObject({ code: "token_tool", allowedTools: ["web_search"] });
    }
    // The job reads are a tool's too (job_result, or the tool that started the job): not this grant's.
    expect((await http(token, "GET", "/api/crawl/00000000-0000-0000-0000-000000000000")).status).toBe(403);
    // The budget is every grant's.
    expect((await http(token, "GET", "/_tollgate/usage")).status).toBe(200);
  });

  it("a grant with every tool of its scopes reaches every row of them; a scope it was not given stays refused", async () => {
    const { token } = await grant({ credential: stack.keys.acme!, scopes: ["search", "jobs"] });
    const scrape = await http(token, "POST", "/api/scrape", { url: "http://web.emulator.test/" });
    expect([scrape.status, ((await scrape.json()) as { code?: string }).code]).not.toEqual([403, "token_tool"]);
    const sandbox = await http(token, "POST", "/api/sandbox", { imageName: "node" });
    expect([sandbox.status, ((await sandbox.json()) as { code?: string }).code]).toEqual([403, "token_scope"]);
  });
});

describe("a token's audience on every surface", () => {
  it("a token issued for another resource is 401 token_audience on HTTP rows and on /mcp alike", async () => {
    const { token } = await stack.gateway.gateway.services.tokens.mint({
      tenant: "acme",
      kind: "mcp",
      scopes: ["search"],
      cap: 1_000_000n,
      keyless: true,
      aud: "https://elsewhere.example/mcp",
      ttlSeconds: 300,
    });
    const r = await http(token, "POST", "/api/web/search", { query: "x" });
    expect([r.status, ((await r.json()) as { code: string }).code]).toEqual([401, "token_audience"]);
    const m = await listToolsAs(fetch, base, token);
    expect(m.status).toBe(401);
    expect(await m.json()).toMatchObject({ code: "token_audience" });
    expect(m.headers.get("www-authenticate")).toContain('error="invalid_token"');
    // The same token for this gateway's /mcp works on both.
    const ours = await stack.gateway.gateway.services.tokens.mint({
      tenant: "acme",
      kind: "mcp",
      scopes: ["search"],
      cap: 1_000_000n,
      keyless: true,
      aud: `${base}/mcp`,
      ttlSeconds: 300,
    });
    expect((await http(ours.token, "POST", "/api/web/search", { query: "x" })).status).toBe(200);
    expect((await listToolsAs(fetch, base, ours.token)).status).toBe(200);
  });
});

describe("the tool → rows table", () => {
  it("names only rows of the route table, and every tool MCP registers", () => {
    const rows = new Set(ROUTES.map((r) => r.name));
    for (const [tool, names] of Object.entries(TOOL_ROWS)) for (const n of names) expect(rows.has(n), `${tool} → ${n}`).toBe(true);
    const registered = new Set(Object.values(toolsByScope()).flat());
    for (const t of registered) expect(Object.keys(TOOL_ROWS), t).toContain(t);
    expect(toolsReach(["web_search"], "crawl.start")).toBe(false);
    expect(toolsReach(["crawl"], "crawl.get")).toBe(true);
    expect(toolsReach(["job_result"], "task.cua.get")).toBe(true);
    expect(toolsReach([], "mcp")).toBe(true);
  });
});
