// The OAuth authorization server inside workerd (the Worker entry, Durable Objects state), driven by the official MCP
// client's auth() with the Worker as its fetch: metadata discovery, dynamic registration, the consent form, the PKCE
// code exchange, a tool called under the grant, a refresh that rotates, and a rotated refresh token used again
// revoking the grant (its open session refused at once). Then, against the emulator and the local chain: a client ID
// metadata document (CIMD, served on 127.0.0.1 by global-setup) instead of registration, searches paid with x402 under
// the grant until its cap refuses with the ledger exact, a refresh after the access token expired (the gateway's clock
// moved ahead), parallel tool calls across the next expiry keeping the grant (the refresh grace window), and the tenant
// revoking the grant closing the open session (token_revoked).
import { env } from "cloudflare:test";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { auth, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import worker from "../../src/host/worker.js";
import {
  type ConsentChoices,
  consentForm,
  type FetchFn,
  listToolsAs,
  MemoryOAuthProvider,
  OAUTH_REDIRECT as REDIRECT,
  postForm,
  refreshWith,
  toolJson as json,
  toolOk as ok,
} from "../helpers/mcp-oauth.js";

const ORIGIN = "https://gateway.test";
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

/** The MCP client's provider, registering as "Workers Agent" with no grant_types (the server's default). */
class MemoryProvider extends MemoryOAuthProvider {
  constructor() {
    super("Workers Agent", { grantTypes: false });
  }
}

/** The consent page at the provider's authorization URL, posted with `choices`: the page and the answer (a 302). */
async function consent(fetchFn: FetchFn, provider: MemoryProvider, choices: ConsentChoices) {
  const page = await (await fetchFn(provider.authUrl!.href)).text();
  return { page, back: await postForm(fetchFn, `${ORIGIN}/authorize`, consentForm(page, choices)) };
}

/** The provider's grant is over: its access token answers token_revoked, its refresh token invalid_grant. */
async function expectGrantEnded(fetchFn: FetchFn, provider: MemoryProvider) {
  const direct = await listToolsAs(fetchFn, ORIGIN, provider.saved!.access_token);
  expect(direct.status).toBe(401);
  expect(await direct.json()).toMatchObject({ code: "token_revoked" });
  const refresh = await refreshWith(fetchFn, ORIGIN, provider.saved!.refresh_token!, provider.client!.client_id);
  expect(await refresh.json()).toMatchObject({ error: "invalid_grant" });
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
    const { page, back } = await consent(fetchFn, provider, { credential: KEY, cap: "0.30", window: "monthly", days: "3" });
    expect(page).toContain("Workers Agent");
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
    const replay = await postForm(fetchFn, `${ORIGIN}/token`, {
      grant_type: "authorization_code",
      code: q.get("code")!,
      client_id: provider.client!.client_id,
      redirect_uri: REDIRECT,
      code_verifier: provider.verifier,
    });
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: "invalid_grant" });
    // The replay revoked the grant the code made: start again for the refresh part.
    await expect(client.callTool({ name: "budget", arguments: {} })).rejects.toThrow();
  });

  it("refresh rotates; the rotated-out token used again revokes the grant", async () => {
    // The gateway's clock, movable (the spy is in place before this config's gateway is built).
    const realNow = Date.now;
    let ahead = 0;
    const spy = vi.spyOn(Date, "now").mockImplementation(() => realNow() + ahead);
    const e = await workerEnv();
    const fetchFn = async (url: string | URL, init?: RequestInit): Promise<Response> => worker.fetch(new Request(url, init), e as any, ctx);
    const provider = new MemoryProvider();
    const mcpUrl = new URL(`${ORIGIN}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn });
    await expect(new Client({ name: "w", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const { back } = await consent(fetchFn, provider, { credential: KEY, days: "1" });
    await first.finishAuth(new URL(back.headers.get("location")!).searchParams.get("code")!);
    const before = provider.saved!;

    // auth() with a refresh token refreshes: a new pair, the old refresh token rotated out.
    expect(await auth(provider, { serverUrl: mcpUrl, fetchFn })).toBe("AUTHORIZED");
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    const client = new Client({ name: "w", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn }));
    expect(((await client.callTool({ name: "budget", arguments: {} })) as CallToolResult).isError).toBeFalsy();

    // Past the grace window (oauth.refreshGraceSeconds, 5 s) that answers a host's parallel refreshes alike.
    ahead += 6_000;
    const reuse = await refreshWith(fetchFn, ORIGIN, before.refresh_token!, provider.client!.client_id);
    expect(await reuse.json()).toMatchObject({ error: "invalid_grant" });
    await expectGrantEnded(fetchFn, provider);
    spy.mockRestore();
  });
});

const stack = inject("stack");

/** A paying gateway (the emulator upstream, x402 on the local chain) for a fresh tenant; CIMD on loopback allowed. */
async function paidEnv(tenant: string, key: string) {
  const config = {
    server: { logLevel: "error" },
    upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host] },
    payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50" },
    cache: { enabled: false },
    state: { backend: "durable-objects" },
    oauth: { accessTokenTtlSeconds: 300, clientMetadataDocuments: { allowHttpLoopback: true, cacheSeconds: 60, timeoutMs: 2_000 } },
    tenants: [
      { id: tenant, keys: [{ hash: await sha256(key) }], scopes: ["search"], budget: { daily: "1.00" } },
      { id: `${tenant}-other`, keys: [{ hash: await sha256(`${key}_other`) }], scopes: ["search"] },
    ],
  };
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify(config),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    // The alerts file's wallet: no file checks its balance, so these payments disturb no one's figures.
    TOLLGATE_WALLET_KEY: stack.alertsWalletKey,
    TOLLGATE_TOKEN_SECRET: "c".repeat(40),
  };
}

/** 401 → discovery → (registration unless the provider names its client) → consent → code → tokens → connected. */
async function connectWithOAuth(fetchFn: FetchFn, provider: MemoryProvider, key: string, cap: string) {
  const mcpUrl = new URL(`${ORIGIN}/mcp`);
  const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn });
  await expect(new Client({ name: "w", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const { page, back } = await consent(fetchFn, provider, { credential: key, cap, days: "1" });
  expect(back.status).toBe(302);
  await first.finishAuth(new URL(back.headers.get("location")!).searchParams.get("code")!);
  const client = new Client({ name: "w", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn }));
  return { client, page };
}

const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: 30_000 }) as Promise<CallToolResult>;

describe("OAuth in workerd, paying", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("a client ID metadata document; paid searches until the grant's cap, the ledger exact; a refresh after expiry", async () => {
    // The gateway's clock, movable: the spy is in place before this config's gateway is built (it keeps Date.now).
    const realNow = Date.now;
    let ahead = 0;
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + ahead);
    const tenant = `oa-${crypto.randomUUID().slice(0, 8)}`;
    const key = `tg_worker_${crypto.randomUUID()}`;
    const e = await paidEnv(tenant, key);
    const fetchFn: FetchFn = async (url, init) => worker.fetch(new Request(url, init), e as any, ctx);
    const as = (await (await fetchFn(`${ORIGIN}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(as.client_id_metadata_document_supported).toBe(true);

    // The client names its metadata document as client_id: no registration; the consent page describes it from there.
    const provider = new MemoryProvider();
    provider.client = { client_id: stack.clientDocUrl };
    const { client, page } = await connectWithOAuth(fetchFn, provider, key, "0.012");
    expect(page).toContain("Doc Agent");
    expect(page).toContain("Its description comes from 127.0.0.1:");
    expect(provider.client.client_id).toBe(stack.clientDocUrl);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["budget", "web_fetch", "web_search"]);

    // Two searches paid (0.005 each); the third would pass the cap of 0.012 and is refused before anything is paid.
    ok(await call(client, "web_search", { query: `workerd oauth one ${tenant}` }));
    ok(await call(client, "web_search", { query: `workerd oauth two ${tenant}` }));
    const third = await call(client, "web_search", { query: `workerd oauth three ${tenant}` });
    expect(third.isError).toBe(true);
    expect(json(third)).toMatchObject({ code: "token_cap_exceeded", status: 402, limit: "0.012", spent: "0.01" });
    const budget = ok(await call(client, "budget"));
    expect(budget.token).toMatchObject({ cap: "0.012", spent: "0.01", remaining: "0.002", window: "total" });
    const grantId = budget.token.grant as string;
    const asTenant = { "x-api-key": key };
    const ledger = (await (await fetchFn(`${ORIGIN}/_tollgate/ledger?limit=100`, { headers: asTenant })).json()) as {
      entries: Array<Record<string, unknown>>;
    };
    expect(ledger.entries.filter((x) => x.state === "committed").map((x) => [x.grant, x.amountUsd])).toEqual([
      [grantId, "0.005"],
      [grantId, "0.005"],
    ]);
    // The refused third: its tenant hold, reserved beside the cap's in one round trip, was given back at once.
    expect(ledger.entries.filter((x) => x.state !== "committed").map((x) => [x.grant, x.state, x.reason])).toEqual([
      [grantId, "released", "token cap exceeded"],
    ]);
    const grants = async () =>
      ((await (await fetchFn(`${ORIGIN}/_tollgate/grants`, { headers: asTenant })).json()) as { grants: any[] }).grants;
    expect((await grants()).find((g) => g.id === grantId)).toMatchObject({
      state: "active",
      cap: "0.012",
      spent: "0.01",
      tokensIssued: 1,
      client: { id: stack.clientDocUrl, name: "Doc Agent" },
    });

    // Past the access token's life: the next call is refused, the SDK refreshes (a new pair), and goes on.
    const before = provider.saved!;
    ahead += 301_000;
    expect(ok(await call(client, "budget")).token).toMatchObject({ grant: grantId, spent: "0.01" });
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    expect((await grants()).find((g) => g.id === grantId)).toMatchObject({ state: "active", spent: "0.01", tokensIssued: 2 });

    // Parallel tool calls across the next expiry: each refreshes with the same refresh token (the SDK does not
    // serialise refreshes); the grace window answers them all with one rotated pair, and the grant lives on.
    ahead += 301_000;
    const parallel = await Promise.all(Array.from({ length: 4 }, () => call(client, "budget")));
    for (const r of parallel) expect(ok(r).token).toMatchObject({ grant: grantId });
    expect((await grants()).find((g) => g.id === grantId)).toMatchObject({ state: "active", tokensIssued: 3 });
    await client.close();
  });

  it("the tenant revoking the grant closes its open session: token_revoked; another tenant cannot see or revoke it", async () => {
    const tenant = `ob-${crypto.randomUUID().slice(0, 8)}`;
    const key = `tg_worker_${crypto.randomUUID()}`;
    const e = await paidEnv(tenant, key);
    const fetchFn: FetchFn = async (url, init) => worker.fetch(new Request(url, init), e as any, ctx);
    const provider = new MemoryProvider();
    const { client } = await connectWithOAuth(fetchFn, provider, key, "0.50");
    expect(provider.client?.client_id).toMatch(/^tgc_/);
    const grantId = ok(await call(client, "budget")).token.grant as string;

    const other = await fetchFn(`${ORIGIN}/_tollgate/grants/${grantId}`, { method: "DELETE", headers: { "x-api-key": `${key}_other` } });
    expect(other.status).toBe(404);
    const r = await fetchFn(`${ORIGIN}/_tollgate/grants/${grantId}`, { method: "DELETE", headers: { "x-api-key": key } });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ id: grantId, state: "revoked" });

    // The open session's next call is refused, and so is its refresh: the client has to ask the tenant again.
    await expect(call(client, "budget")).rejects.toThrow();
    await expectGrantEnded(fetchFn, provider);
  });
});
