// Agents connect with a link (issue 42): the official MCP TypeScript client's OAuth flow (its OAuthClientProvider,
// auth() inside StreamableHTTPClientTransport) end to end against a Node gateway in front of the emulator. The client
// discovers the authorization server from /mcp's 401, registers (RFC 7591) or names its metadata document (CIMD),
// sends the tenant to the consent page (submitted here over HTTP, as a browser would), exchanges the code with PKCE,
// calls tools under the grant's scopes until the grant's cap stops it, refreshes after expiry; a rotated refresh
// token used again revokes the grant; revoking a grant cuts the open session. Every mistake is an OAuth error code.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import {
  type ConsentChoices,
  consentForm,
  listToolsAs,
  MemoryOAuthProvider,
  OAUTH_REDIRECT as REDIRECT,
  pkcePair as pkce,
  postForm,
  registerClient,
  toolJson as json,
  toolOk as ok,
} from "../helpers/mcp-oauth.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway } from "../../src/host/node.js";

const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];

let stack: SessionGateway;
let base: string;
/** The gateway's clock runs this far ahead of the real one (a token's expiry without waiting for it). */
let ahead = 0;
let docServer: Server;
let docUrl: string;
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "acme", scopes: ALL, budget: { daily: "5.00" } },
      { id: "initech", scopes: ["search"] },
      { id: "ops", scopes: ["admin", "search"] },
    ],
    {
      modules: ["sessions", "jobs", "x402"],
      now: () => Date.now() + ahead,
      config: {
        oauth: { accessTokenTtlSeconds: 300, clientMetadataDocuments: { allowHttpLoopback: true, cacheSeconds: 60, timeoutMs: 500 } },
      },
    },
  );
  base = stack.gateway.url;
  // A client's metadata document (CIMD), served from the "client's" own origin.
  docServer = createServer((req, res) => {
    const self = `http://127.0.0.1:${(docServer.address() as AddressInfo).port}${req.url}`;
    if (req.url === "/big.json")
      return res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ client_id: self, pad: "x".repeat(100_000), redirect_uris: [REDIRECT] }));
    if (req.url === "/slow.json") return; // never answers
    if (req.url === "/other-id.json") return res.writeHead(200).end(JSON.stringify({ client_id: docUrl, redirect_uris: [REDIRECT] }));
    if (req.url === "/not-json.json") return res.writeHead(200).end("<html>");
    if (req.url !== "/client.json") return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ client_id: docUrl, client_name: "Doc Agent", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }));
  });
  await new Promise<void>((r) => docServer.listen(0, "127.0.0.1", r));
  docUrl = `http://127.0.0.1:${(docServer.address() as AddressInfo).port}/client.json`;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  docServer?.closeAllConnections();
  docServer?.close();
  await stack?.close();
});

/** The MCP client's provider, registering as "Test Agent" (or naming a client already known). */
class TestProvider extends MemoryOAuthProvider {
  constructor(preset?: OAuthClientInformationMixed) {
    super("Test Agent", { client: preset });
  }
}

/** Reads the consent page as a browser would and posts its form with the tenant's choices. */
async function consent(authUrl: URL | string, choices: ConsentChoices): Promise<Response> {
  const page = await fetch(authUrl, { redirect: "manual" });
  expect(page.status).toBe(200);
  expect(page.headers.get("x-frame-options")).toBe("DENY");
  return postForm(fetch, `${base}/authorize`, consentForm(await page.text(), choices));
}

/** The code (and state, iss) the consent's redirect carries. */
function codeOf(res: Response): URLSearchParams {
  expect(res.status).toBe(302);
  const loc = new URL(res.headers.get("location")!);
  expect(`${loc.origin}${loc.pathname}`).toBe(REDIRECT);
  return loc.searchParams;
}

/** Connects through the whole flow: 401 → discovery → registration or CIMD → consent → code → tokens → connected. */
async function connectWithOAuth(
  provider: TestProvider,
  choices: ConsentChoices,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const url = new URL(`${base}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await expect(new Client({ name: "oauth-test", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authUrl).toBeDefined();
  const back = codeOf(await consent(provider.authUrl!, choices));
  expect(back.get("iss")).toBe(base);
  expect(back.get("state")).toBe(provider.authUrl!.searchParams.get("state"));
  await first.finishAuth(back.get("code")!);
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const client = new Client({ name: "oauth-test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }) as Promise<CallToolResult>;

const post = (path: string, form: Record<string, string>) => postForm(fetch, `${base}${path}`, form);
const grantsOf = async (tenant: string) =>
  (await (await fetch(`${base}/_tollgate/grants`, { headers: { "x-api-key": stack.keys[tenant]! } })).json()).grants as any[];

/** A registered client, by hand (for the error cases). */
async function registered(): Promise<string> {
  const r = await registerClient(fetch, base, "Hand Client");
  expect(r.status).toBe(201);
  return (await r.json()).client_id;
}

function authorizeUrl(params: Record<string, string | undefined>): string {
  const u = new URL(`${base}/authorize`);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.href;
}

/** A code for `clientId` with a fresh PKCE pair, consented by acme. */
async function codeFor(clientId: string, extra: Record<string, string> = {}) {
  const p = await pkce();
  const back = codeOf(
    await consent(
      authorizeUrl({
        response_type: "code",
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_challenge: p.challenge,
        code_challenge_method: "S256",
        scope: "search",
        state: "s1",
        ...extra,
      }),
      { credential: stack.keys.acme! },
    ),
  );
  return { code: back.get("code")!, verifier: p.verifier };
}

describe("discovery", () => {
  it("the protected resource names the gateway's authorization server, whose metadata says what it supports", async () => {
    const r = await fetch(`${base}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(r.status).toBe(401);
    const prm = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(prm).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    const as = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
    expect(as).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/token`,
      registration_endpoint: `${base}/register`,
      revocation_endpoint: `${base}/revoke`,
      code_challenge_methods_supported: ["S256"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      token_endpoint_auth_methods_supported: ["none"],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });
  });

  it("a browser-based client (the MCP Inspector) may run the flow from its own origin: CORS on the OAuth endpoints", async () => {
    const pre = await fetch(`${base}/register`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:6274",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-headers")).toContain("mcp-protocol-version");
    const as = await fetch(`${base}/.well-known/oauth-authorization-server`, { headers: { origin: "http://localhost:6274" } });
    expect(as.headers.get("access-control-allow-origin")).toBe("*");
    const prm = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`, { headers: { origin: "http://localhost:6274" } });
    expect(prm.headers.get("access-control-allow-origin")).toBe("*");
    const bad = await post("/token", { grant_type: "nope" });
    expect(bad.headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("the MCP client's OAuth flow", () => {
  it("dynamic registration, PKCE, consent: tools under the grant's scopes until its cap stops them, the ledger exact", async () => {
    const provider = new TestProvider();
    const { client } = await connectWithOAuth(provider, { credential: stack.keys.acme!, scopes: ["search"], cap: "0.012" });
    expect(provider.client?.client_id).toMatch(/^tgc_/);
    expect(provider.saved?.refresh_token).toMatch(/^tgr_/);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["budget", "web_fetch", "web_search"]);
    ok(await call(client, "web_search", { query: "oauth one" }));
    ok(await call(client, "web_search", { query: "oauth two" }));
    const third = await call(client, "web_search", { query: "oauth three" });
    expect(third.isError).toBe(true);
    expect(json(third)).toMatchObject({ code: "token_cap_exceeded", status: 402, limit: "0.012", spent: "0.01" });
    const budget = ok(await call(client, "budget"));
    expect(budget.token).toMatchObject({ cap: "0.012", spent: "0.01", remaining: "0.002", window: "total" });
    // The grant, as the tenant lists it, and the ledger: two committed searches, each naming the grant.
    const [grant] = (await grantsOf("acme")).filter((g) => g.id === budget.token.grant);
    expect(grant).toMatchObject({
      state: "active",
      client: { name: "Test Agent", redirectHost: "127.0.0.1:9" },
      scopes: ["search"],
      cap: "0.012",
      spent: "0.01",
    });
    const ledger = await (
      await fetch(`${base}/_tollgate/ledger?kind=credits&limit=1000`, { headers: { "x-api-key": stack.keys.acme! } })
    ).json();
    const mine = ledger.entries.filter((e: any) => e.grant === grant.id);
    expect(mine.filter((e: any) => e.state === "committed").map((e: any) => [e.route, e.amountUsd])).toEqual([
      ["web.search", "0.005"],
      ["web.search", "0.005"],
    ]);
    // The refused third: its tenant hold, reserved beside the cap's in one round trip, was given back at once.
    expect(mine.filter((e: any) => e.state !== "committed").map((e: any) => [e.state, e.reason])).toEqual([
      ["released", "token cap exceeded"],
    ]);
  });

  it("a client ID metadata document: the consent page names the client from it; a refresh after expiry goes on", async () => {
    const provider = new TestProvider({ client_id: docUrl });
    const page = await (async () => {
      const t = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
      await expect(new Client({ name: "x", version: "1" }).connect(t)).rejects.toBeInstanceOf(UnauthorizedError);
      return (await fetch(provider.authUrl!)).text();
    })();
    expect(page).toContain("Doc Agent");
    expect(page).toContain(`Its description comes from 127.0.0.1:`);
    provider.authUrl = undefined;
    const { client } = await connectWithOAuth(provider, {
      credential: stack.keys.acme!,
      scopes: ["search", "jobs"],
      cap: "1.00",
      // "total": a daily window would start again if the 301 s skip below crossed midnight (UTC).
      window: "total",
    });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(["web_search", "scrape", "crawl"]));
    const before = provider.saved!;
    ok(await call(client, "web_search", { query: "before expiry" }));
    // Past the access token's life: the next call is refused, the SDK refreshes (rotating the refresh token), and goes on.
    ahead += 301_000;
    ok(await call(client, "web_search", { query: "after expiry" }));
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    const grant = (await grantsOf("acme")).find((g) => g.client.id === docUrl)!;
    expect(grant).toMatchObject({ window: "total", spent: "0.01", tokensIssued: 2, client: { name: "Doc Agent" } });

    // The rotated-out refresh token used again (stolen), past the grace window (5 s) that answers a host's parallel
    // refreshes alike: invalid_grant, and the whole grant is revoked, the open session with it: the next call finds
    // the access token revoked and the refresh refused.
    ahead += 6_000;
    const reuse = await post("/token", { grant_type: "refresh_token", refresh_token: before.refresh_token!, client_id: docUrl });
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ error: "invalid_grant" });
    expect((await grantsOf("acme")).find((g) => g.id === grant.id)).toMatchObject({
      state: "revoked",
      revokedReason: "refresh token reused",
    });
    await expect(call(client, "web_search", { query: "after reuse" })).rejects.toThrow();
    const current = await post("/token", { grant_type: "refresh_token", refresh_token: provider.saved!.refresh_token!, client_id: docUrl });
    expect(await current.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("revoking a grant (tenant API) cuts its open session at once; another tenant cannot see or revoke it", async () => {
    const provider = new TestProvider();
    const { client } = await connectWithOAuth(provider, { credential: stack.keys.acme!, scopes: ["search"], cap: "0.50" });
    ok(await call(client, "budget"));
    const grant = ok(await call(client, "budget")).token.grant as string;
    const other = await fetch(`${base}/_tollgate/grants/${grant}`, { method: "DELETE", headers: { "x-api-key": stack.keys.initech! } });
    expect(other.status).toBe(404);
    expect((await grantsOf("initech")).map((g) => g.id)).not.toContain(grant);
    const r = await fetch(`${base}/_tollgate/grants/${grant}`, { method: "DELETE", headers: { "x-api-key": stack.keys.acme! } });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ id: grant, state: "revoked" });
    // The access token is refused (token_revoked) and so is its refresh: the client has to ask the tenant again.
    await expect(call(client, "budget")).rejects.toThrow();
    const direct = await listToolsAs(fetch, base, provider.saved!.access_token);
    expect(direct.status).toBe(401);
    expect(await direct.json()).toMatchObject({ code: "token_revoked" });
  });

  it("a grant narrowed to some tools lists and runs only those (budget always)", async () => {
    const provider = new TestProvider();
    const { client } = await connectWithOAuth(provider, {
      credential: stack.keys.acme!,
      scopes: ["search", "jobs"],
      tools: ["web_search", "scrape"],
    });
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["budget", "scrape", "web_search"]);
    const fetched = await call(client, "web_fetch", { url: "http://web.emulator.test/about" });
    expect(fetched.isError).toBe(true);
    expect(JSON.stringify(fetched.content)).toMatch(/Tool web_fetch not found/);
    const grant = ok(await call(client, "budget")).token.grant;
    expect((await grantsOf("acme")).find((g) => g.id === grant)).toMatchObject({ tools: ["web_search", "scrape"] });
  });

  it("RFC 7009: revoking the refresh token ends the grant; unknown tokens answer 200", async () => {
    const provider = new TestProvider();
    await connectWithOAuth(provider, { credential: stack.keys.acme!, scopes: ["search"] });
    const clientId = provider.client!.client_id;
    // Another client presenting the refresh token: invalid_grant, and the token is not used up by it.
    const stranger = await post("/token", {
      grant_type: "refresh_token",
      refresh_token: provider.saved!.refresh_token!,
      client_id: await registered(),
    });
    expect(await stranger.json()).toMatchObject({ error: "invalid_grant" });
    const own = await post("/token", { grant_type: "refresh_token", refresh_token: provider.saved!.refresh_token!, client_id: clientId });
    expect(own.status).toBe(200);
    provider.saved = await own.json();
    expect((await post("/revoke", { token: "tgr_nothing", client_id: clientId })).status).toBe(200);
    expect((await post("/revoke", { token: provider.saved!.refresh_token!, client_id: clientId })).status).toBe(200);
    const refreshed = await post("/token", {
      grant_type: "refresh_token",
      refresh_token: provider.saved!.refresh_token!,
      client_id: clientId,
    });
    expect(await refreshed.json()).toMatchObject({ error: "invalid_grant" });
  });
});

describe("grants in the console and the admin API", () => {
  const asOps = { "x-api-key": "" };
  beforeAll(() => {
    asOps["x-api-key"] = stack.keys.ops!;
  });

  /** A console session for a key: its cookie. */
  async function signedIn(key: string): Promise<string> {
    const r = await fetch(`${base}/_tollgate/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
      body: new URLSearchParams({ key }),
    });
    expect(r.status).toBe(303);
    return r.headers.get("set-cookie")!.split(";")[0]!;
  }

  it("lists each grant with its client, spend and last use, and revokes it: the tenant in the console, an operator by API", async () => {
    const provider = new TestProvider();
    const { client } = await connectWithOAuth(provider, {
      credential: stack.keys.acme!,
      scopes: ["search"],
      cap: "0.20",
      window: "monthly",
    });
    ok(await call(client, "web_search", { query: "listed grant" }));
    const id = ok(await call(client, "budget")).token.grant as string;

    const listed = await (await fetch(`${base}/_tollgate/admin/grants?tenant=acme`, { headers: asOps })).json();
    const g = listed.grants.find((x: any) => x.id === id);
    expect(g).toMatchObject({
      tenant: "acme",
      state: "active",
      cap: "0.20",
      window: "monthly",
      spent: "0.005",
      client: { name: "Test Agent" },
    });
    expect(Date.parse(g.lastUsedAt)).toBeGreaterThan(Date.parse(g.createdAt) - 1);
    expect((await fetch(`${base}/_tollgate/admin/grants?tenant=acme`, { headers: { "x-api-key": stack.keys.acme! } })).status).toBe(403);
    expect((await fetch(`${base}/_tollgate/admin/grants`, { headers: asOps })).status).toBe(400);

    // The tenant's console lists it; revoking it there ends the agent's session.
    const cookie = await signedIn(stack.keys.acme!);
    const page = await (await fetch(`${base}/_tollgate/console/grants`, { headers: { cookie } })).text();
    expect(page).toContain(`data-grant="${id}"`);
    expect(page).toContain("Test Agent");
    const csrf = page.match(/name="_csrf" value="([^"]+)"/)![1]!;
    const other = await signedIn(stack.keys.initech!);
    const otherPage = await (await fetch(`${base}/_tollgate/console/grants`, { headers: { cookie: other } })).text();
    expect(otherPage).not.toContain(id);
    const revoke = await fetch(`${base}/_tollgate/console/grants/${id}/revoke`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf }),
    });
    expect(revoke.status).toBe(303);
    await expect(call(client, "budget")).rejects.toThrow();
    const after = await (await fetch(`${base}/_tollgate/admin/grants?tenant=acme`, { headers: asOps })).json();
    expect(after.grants.find((x: any) => x.id === id)).toMatchObject({ state: "revoked", revokedReason: "revoked by the tenant" });

    // An operator revokes another through the admin API.
    const second = new TestProvider();
    const c2 = await connectWithOAuth(second, { credential: stack.keys.acme!, scopes: ["search"] });
    const id2 = ok(await call(c2.client, "budget")).token.grant as string;
    const del = await fetch(`${base}/_tollgate/admin/grants/${id2}`, { method: "DELETE", headers: asOps });
    expect(await del.json()).toMatchObject({ id: id2, state: "revoked", revokedReason: "revoked by an operator" });
    await expect(call(c2.client, "budget")).rejects.toThrow();
    expect((await fetch(`${base}/_tollgate/admin/grants/grt_AAAAAAAAAAAAAAAAAAAAAAAA`, { method: "DELETE", headers: asOps })).status).toBe(
      404,
    );
  });

  it("the consent page signs in with a one-time console link too", async () => {
    const link = await (
      await fetch(`${base}/_tollgate/admin/console-links`, {
        method: "POST",
        headers: { ...asOps, "content-type": "application/json" },
        body: "{}",
      })
    ).json();
    const provider = new TestProvider();
    const { client } = await connectWithOAuth(provider, { credential: link.url, scopes: ["search"] });
    expect(ok(await call(client, "budget")).token.grant).toMatch(/^grt_/);
    expect((await (await fetch(`${base}/_tollgate/grants`, { headers: asOps })).json()).grants).toHaveLength(1);
  });
});

describe("mistakes get OAuth error codes, never a 500", () => {
  it("the authorization request: unknown client and wrong redirect URI are a page; missing or plain PKCE, another resource go back as errors", async () => {
    const clientId = await registered();
    const { challenge } = await pkce();
    const ok = {
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: "st",
    };
    const unknown = await fetch(authorizeUrl({ ...ok, client_id: "tgc_00000000000000000000000000000000" }), { redirect: "manual" });
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain("invalid_client");
    const wrong = await fetch(authorizeUrl({ ...ok, redirect_uri: "https://evil.example/cb" }), { redirect: "manual" });
    expect(wrong.status).toBe(400);
    expect(wrong.headers.get("location")).toBeNull();
    const errorOf = async (params: Record<string, string | undefined>) => {
      const r = await fetch(authorizeUrl(params), { redirect: "manual" });
      expect(r.status).toBe(302);
      const q = new URL(r.headers.get("location")!).searchParams;
      expect(q.get("state")).toBe("st");
      expect(q.get("iss")).toBe(base);
      return q.get("error");
    };
    expect(await errorOf({ ...ok, code_challenge: undefined, code_challenge_method: undefined })).toBe("invalid_request");
    expect(await errorOf({ ...ok, code_challenge_method: "plain" })).toBe("invalid_request");
    expect(await errorOf({ ...ok, code_challenge_method: undefined })).toBe("invalid_request");
    expect(await errorOf({ ...ok, resource: "https://other.example/mcp" })).toBe("invalid_target");
    expect(await errorOf({ ...ok, scope: "admin" })).toBe("invalid_scope");
    // Scopes it does not know are ignored: the page offers what the client may have.
    const lenient = await fetch(authorizeUrl({ ...ok, scope: "openid offline_access search" }), { redirect: "manual" });
    expect(lenient.status).toBe(200);
    expect(await lenient.text()).toContain('value="search"');
    expect(await errorOf({ ...ok, response_type: "token" })).toBe("unsupported_response_type");
    // A loopback redirect URI matches on any port (RFC 8252); another path does not.
    const loop = await fetch(authorizeUrl({ ...ok, redirect_uri: "http://127.0.0.1:5555/oauth/callback" }), { redirect: "manual" });
    expect(loop.status).toBe(200);
    const otherPath = await fetch(authorizeUrl({ ...ok, redirect_uri: "http://127.0.0.1:5555/elsewhere" }), { redirect: "manual" });
    expect(otherPath.status).toBe(400);
  });

  it("a client metadata document that is too big, too slow, not JSON, names another URL or is missing: invalid_client, no redirect", async () => {
    const { challenge } = await pkce();
    const origin = new URL(docUrl).origin;
    for (const path of ["/big.json", "/slow.json", "/not-json.json", "/other-id.json", "/missing.json"]) {
      const started = Date.now();
      const r = await fetch(
        authorizeUrl({
          response_type: "code",
          client_id: `${origin}${path}`,
          redirect_uri: REDIRECT,
          code_challenge: challenge,
          code_challenge_method: "S256",
        }),
        { redirect: "manual" },
      );
      expect(r.status, path).toBe(400);
      expect(await r.text()).toContain("invalid_client");
      expect(Date.now() - started).toBeLessThan(2_000);
    }
  });

  it("the consent form: a wrong key, a scope the tenant lacks, no cap are refused on the page; deny goes back as access_denied", async () => {
    const clientId = await registered();
    const { challenge } = await pkce();
    const url = authorizeUrl({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: "S256",
      scope: "search sandboxes",
      state: "z",
    });
    expect((await consent(url, { credential: "tg_wrong" })).status).toBe(401);
    const lacking = await consent(url, { credential: stack.keys.initech!, scopes: ["sandboxes"] });
    expect(lacking.status).toBe(403);
    expect(await lacking.text()).toContain("does not have the scope sandboxes");
    expect((await consent(url, { credential: stack.keys.acme!, cap: "0" })).status).toBe(400);
    expect((await consent(url, { credential: stack.keys.acme!, days: "9999" })).status).toBe(400);
    const denied = await consent(url, { credential: "", action: "deny" });
    expect(denied.status).toBe(302);
    expect(new URL(denied.headers.get("location")!).searchParams.get("error")).toBe("access_denied");
  });

  it("the token endpoint: wrong redirect URI, missing verifier, wrong verifier, another resource, a replayed code", async () => {
    const clientId = await registered();
    const exchange = (code: string, extra: Record<string, string>) =>
      post("/token", { grant_type: "authorization_code", code, client_id: clientId, redirect_uri: REDIRECT, ...extra });
    const errorOf = async (r: Response) => {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      return (await r.json()).error;
    };

    let c = await codeFor(clientId);
    expect(await errorOf(await exchange(c.code, { code_verifier: c.verifier, redirect_uri: "http://127.0.0.1:9/other" }))).toBe(
      "invalid_grant",
    );
    c = await codeFor(clientId);
    expect(await errorOf(await exchange(c.code, {}))).toBe("invalid_request");
    c = await codeFor(clientId);
    expect(await errorOf(await exchange(c.code, { code_verifier: (await pkce()).verifier }))).toBe("invalid_grant");
    c = await codeFor(clientId);
    expect(await errorOf(await exchange(c.code, { code_verifier: c.verifier, resource: "https://other.example/mcp" }))).toBe(
      "invalid_target",
    );
    c = await codeFor(clientId);
    expect(await errorOf(await exchange(c.code, { code_verifier: c.verifier, client_id: await registered() }))).toBe("invalid_grant");

    // A good exchange, then the same code again: invalid_grant, and the grant the code made is revoked.
    c = await codeFor(clientId);
    const good = await exchange(c.code, { code_verifier: c.verifier, resource: `${base}/mcp` });
    expect(good.status).toBe(200);
    const tokens = await good.json();
    expect(tokens).toMatchObject({ token_type: "Bearer", expires_in: 300, scope: "search" });
    expect(good.headers.get("cache-control")).toBe("no-store");
    expect(await errorOf(await exchange(c.code, { code_verifier: c.verifier }))).toBe("invalid_grant");
    const refreshed = await post("/token", { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: clientId });
    expect(await errorOf(refreshed)).toBe("invalid_grant");

    expect(await errorOf(await post("/token", { grant_type: "password", username: "u" }))).toBe("unsupported_grant_type");
    expect(await errorOf(await post("/token", {}))).toBe("invalid_request");
    const notForm = await fetch(`${base}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(await errorOf(notForm)).toBe("invalid_request");
    expect(await errorOf(await post("/token", { grant_type: "refresh_token", refresh_token: "tgr_x", client_id: clientId }))).toBe(
      "invalid_grant",
    );
  });

  it("registration: bad metadata is invalid_client_metadata or invalid_redirect_uri", async () => {
    const reg = (body: string) => fetch(`${base}/register`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const errorOf = async (r: Response) => {
      expect(r.status).toBe(400);
      return (await r.json()).error;
    };
    expect(await errorOf(await reg("not json"))).toBe("invalid_client_metadata");
    expect(await errorOf(await reg("{}"))).toBe("invalid_redirect_uri");
    expect(await errorOf(await reg(JSON.stringify({ redirect_uris: ["http://evil.example/cb"] })))).toBe("invalid_redirect_uri");
    expect(await errorOf(await reg(JSON.stringify({ redirect_uris: ["javascript:alert(1)"] })))).toBe("invalid_redirect_uri");
    expect(await errorOf(await reg(JSON.stringify({ redirect_uris: [REDIRECT], grant_types: ["client_credentials"] })))).toBe(
      "invalid_client_metadata",
    );
  });
});

describe("oauth.enabled = false", () => {
  it("names no authorization server, and its endpoints answer 404", async () => {
    const off = await startNodeGateway({
      config: parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "error" },
        upstream: { baseUrl: "http://127.0.0.1:9" },
        oauth: { enabled: false },
      }),
      secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) },
    });
    try {
      const prm = await (await fetch(`${off.url}/.well-known/oauth-protected-resource/mcp`)).json();
      expect(prm.authorization_servers).toBeUndefined();
      expect((await fetch(`${off.url}/.well-known/oauth-authorization-server`)).status).toBe(404);
      const token = await fetch(`${off.url}/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=refresh_token",
      });
      expect(token.status).toBe(404);
      expect(await token.json()).toMatchObject({ error: "not_found" });
      expect((await fetch(`${off.url}/authorize?client_id=x`)).status).toBe(404);
      expect(
        (await fetch(`${off.url}/register`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status,
      ).toBe(404);
    } finally {
      await off.close();
    }
  });
});
