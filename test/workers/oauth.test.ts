// The OAuth authorization server inside workerd (the Worker entry, Durable Objects state), driven by the official MCP
// client's auth() with the Worker as its fetch: metadata discovery, dynamic registration, the consent form, the PKCE
// code exchange, a tool called under the grant, a refresh that rotates, and a rotated refresh token used again
// revoking the grant (its open session refused at once).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { auth, UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import worker from "../../src/platform/worker.js";

const ORIGIN = "https://gateway.test";
const REDIRECT = "http://127.0.0.1:9/oauth/callback";
const KEY = "tg_workers_oauth_key_0123456789";
const ctx = { waitUntil() {}, passThroughOnException() {} };

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function workerEnv() {
  const config = {
    server: { logLevel: "error" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    tenants: [{ id: "acme", keys: [{ hash: await sha256(KEY) }], scopes: ["search", "jobs"] }],
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: "k",
    TOLLGATE_TOKEN_SECRET: "o".repeat(40),
  };
}

class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authUrl?: URL;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "Workers Agent", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.client = i;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  redirectToAuthorization(u: URL) {
    this.authUrl = u;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describe("OAuth in workerd", () => {
  it("discovery, registration, consent, the PKCE exchange, a tool call; a replayed code revokes the grant", async () => {
    const e = await workerEnv();
    const fetchFn = async (url: string | URL, init?: RequestInit): Promise<Response> => worker.fetch(new Request(url, init), e as any, ctx);
    const as = await (await fetchFn(`${ORIGIN}/.well-known/oauth-authorization-server`)).json();
    expect(as).toMatchObject({ issuer: ORIGIN, token_endpoint: `${ORIGIN}/token`, code_challenge_methods_supported: ["S256"] });
    const prm = await (await fetchFn(`${ORIGIN}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(prm).toMatchObject({ resource: `${ORIGIN}/mcp`, authorization_servers: [ORIGIN] });

    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${ORIGIN}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn });
    await expect(new Client({ name: "w", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.client?.client_id).toMatch(/^tgc_/);

    // The consent form, as a browser posts it.
    const page = await (await fetchFn(provider.authUrl!.href)).text();
    expect(page).toContain("Workers Agent");
    const form = new URLSearchParams({
      request: page.match(/name="request" value="([^"]+)"/)![1]!,
      _csrf: page.match(/name="_csrf" value="([^"]+)"/)![1]!,
      credential: KEY,
      scope: "search",
      cap: "0.30",
      window: "monthly",
      days: "3",
      action: "allow",
    });
    const back = await fetchFn(`${ORIGIN}/authorize`, {
      method: "POST",
      body: form,
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(back.status).toBe(302);
    const q = new URL(back.headers.get("location")!).searchParams;
    expect(q.get("iss")).toBe(ORIGIN);
    await first.finishAuth(q.get("code")!);

    const client = new Client({ name: "w", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn }));
    const budget = (await client.callTool({ name: "budget", arguments: {} })) as CallToolResult;
    const token = JSON.parse((budget.content[0] as { text: string }).text).token;
    expect(token).toMatchObject({ cap: "0.30", window: "monthly", spent: "0.00" });

    // A replayed code is refused.
    const replay = await fetchFn(`${ORIGIN}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: q.get("code")!,
        client_id: provider.client!.client_id,
        redirect_uri: REDIRECT,
        code_verifier: provider.verifier,
      }),
    });
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: "invalid_grant" });
    // The replay revoked the grant the code made: start again for the refresh part.
    await expect(client.callTool({ name: "budget", arguments: {} })).rejects.toThrow();
  });

  it("refresh rotates; the rotated-out token used again revokes the grant", async () => {
    const e = await workerEnv();
    const fetchFn = async (url: string | URL, init?: RequestInit): Promise<Response> => worker.fetch(new Request(url, init), e as any, ctx);
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${ORIGIN}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn });
    await expect(new Client({ name: "w", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const page = await (await fetchFn(provider.authUrl!.href)).text();
    const form = new URLSearchParams({
      request: page.match(/name="request" value="([^"]+)"/)![1]!,
      _csrf: page.match(/name="_csrf" value="([^"]+)"/)![1]!,
      credential: KEY,
      scope: "search",
      cap: "1.00",
      window: "total",
      days: "1",
      action: "allow",
    });
    const back = await fetchFn(`${ORIGIN}/authorize`, {
      method: "POST",
      body: form,
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    await first.finishAuth(new URL(back.headers.get("location")!).searchParams.get("code")!);
    const before = provider.saved!;

    // auth() with a refresh token refreshes: a new pair, the old refresh token rotated out.
    expect(await auth(provider, { serverUrl: mcpUrl, fetchFn })).toBe("AUTHORIZED");
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    const client = new Client({ name: "w", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn }));
    expect(((await client.callTool({ name: "budget", arguments: {} })) as CallToolResult).isError).toBeFalsy();

    const reuse = await fetchFn(`${ORIGIN}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: before.refresh_token!,
        client_id: provider.client!.client_id,
      }),
    });
    expect(await reuse.json()).toMatchObject({ error: "invalid_grant" });
    const mcp = await fetchFn(`${ORIGIN}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${provider.saved!.access_token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(mcp.status).toBe(401);
    expect(await mcp.json()).toMatchObject({ code: "token_revoked" });
    const current = await fetchFn(`${ORIGIN}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: provider.saved!.refresh_token!,
        client_id: provider.client!.client_id,
      }),
    });
    expect(await current.json()).toMatchObject({ error: "invalid_grant" });
  });
});
