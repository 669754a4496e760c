// The MCP endpoint inside workerd (the Worker entry, Durable Objects state), driven by the official MCP client whose
// fetch is the Worker's: tools listed per scope, a search paid with x402 on the local chain through the tool, a capped
// token stopped at its cap, and bad input answered as MCP errors.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { createPublicClient, erc20Abi, http } from "viem";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import worker from "../../src/host/worker.js";
import { standInCalls } from "./stand-ins.js";

const stack = inject("stack");
const ORIGIN = "https://gateway.test";
const ctx = { waitUntil() {}, passThroughOnException() {} };

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const chain = createPublicClient({ transport: http(stack.rpcUrl) });
const balance = () =>
  chain.readContract({
    address: stack.asset as `0x${string}`,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [stack.mcpWallet as `0x${string}`],
  });

async function workerEnv(tenant: string, key: string) {
  const config = {
    server: { logLevel: "error" },
    upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host] },
    payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50" },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [{ id: tenant, keys: [{ hash: await sha256(key) }], scopes: ["search", "sessions", "sandboxes"], budget: { daily: "1.00" } }],
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.mcpWalletKey,
    TOLLGATE_TOKEN_SECRET: "m".repeat(40),
  };
}

async function connect(e: Record<string, unknown>, credential: string): Promise<Client> {
  const client = new Client({ name: "workers-mcp-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${credential}` } },
    fetch: async (url, init) => worker.fetch(new Request(url, init), e as any, ctx),
  });
  await client.connect(transport);
  return client;
}

const text = (r: CallToolResult) => JSON.parse((r.content.find((p) => p.type === "text") as { text: string }).text);

describe("MCP in workerd", () => {
  it("lists tools per scope, pays a search with x402 through the tool, stops a capped token at its cap", async () => {
    const key = `tg_worker_${crypto.randomUUID()}`;
    const tenant = `mcp-${crypto.randomUUID().slice(0, 8)}`;
    const e = await workerEnv(tenant, key);

    const byKey = await connect(e, key);
    const names = (await byKey.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["budget", "web_search", "browser_create", "sandbox_exec"]));
    expect(names).not.toContain("scrape"); // the tenant has no "jobs" scope

    const minted = await worker.fetch(
      new Request(`${ORIGIN}/_tollgate/tokens`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ kind: "mcp", scopes: ["search"], cap: "0.007", ttlSeconds: 300 }),
      }),
      e as any,
      ctx,
    );
    expect(minted.status).toBe(201);
    const { token } = (await minted.json()) as { token: string };
    const agent = await connect(e, token);
    expect((await agent.listTools()).tools.map((t) => t.name).sort()).toEqual(["budget", "web_fetch", "web_search"]);

    const before = await balance();
    const paid = (await agent.callTool({ name: "web_search", arguments: { query: "electric vehicle charging" } })) as CallToolResult;
    expect(paid.isError).toBeFalsy();
    expect(text(paid).data.results.length).toBeGreaterThan(0);
    expect(before - (await balance())).toBe(5000n);

    const capped = (await agent.callTool({
      name: "web_search",
      arguments: { query: `workerd mcp ${crypto.randomUUID()}` },
    })) as CallToolResult;
    expect(capped.isError).toBe(true);
    expect(text(capped)).toMatchObject({ code: "token_cap_exceeded", status: 402, limit: "0.007", spent: "0.005" });
    expect(before - (await balance())).toBe(5000n);
    const budget = text((await agent.callTool({ name: "budget", arguments: {} })) as CallToolResult);
    expect(budget.token).toMatchObject({ cap: "0.007", spent: "0.005", remaining: "0.002" });

    const unknown = (await agent.callTool({ name: "scrape", arguments: {} })) as CallToolResult;
    expect(unknown.isError).toBe(true);
    // Arguments are closed objects: a field the tool does not name is refused before anything is sent.
    const bad = (await agent.callTool({ name: "web_search", arguments: { query: "x", sneaky: true } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toMatch(/validation/i);
    // The stateless revision answers in workerd too.
    const discover = await worker.fetch(
      new Request(`${ORIGIN}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "server/discover",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "server/discover",
          params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
        }),
      }),
      e as any,
      ctx,
    );
    expect(((await discover.json()) as { result: { supportedVersions: string[] } }).result.supportedVersions).toContain("2026-07-28");
    const statelessCall = await worker.fetch(
      new Request(`${ORIGIN}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "tools/call",
          "mcp-name": "budget",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "budget", arguments: {}, _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
        }),
      }),
      e as any,
      ctx,
    );
    const answered = (await statelessCall.json()) as { result: { resultType: string; content: Array<{ text: string }> } };
    expect(answered.result.resultType).toBe("complete");
    expect(JSON.parse(answered.result.content[0]!.text)).toHaveProperty("tenant", tenant);
    await byKey.close();
    await agent.close();
  });

  it("ran none of the code the bundle's stand-ins replace (ajv, Zod 3, viem's createPublicClient)", () => {
    expect(standInCalls()).toEqual([]);
  });
});
