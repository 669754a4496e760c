// OAuth as real hosts use it (issue 53): the official MCP client (its OAuthClientProvider) making parallel tool calls
// across an access token's expiry keeps its grant (every call refreshes with the same refresh token; the grace window
// answers them all with one rotated pair); `oauth4webapi` walks the RFC points (a refused request uses nothing up,
// unknown clients get invalid_client, HTTP Basic gets 401, no redirect to a URI nobody vouches for, `state` twice is a
// 400, the root protected-resource metadata names the origin); and the credential tree: once the tenant key that
// consented is revoked, its grant neither refreshes nor pays.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as oauth from "oauth4webapi";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { consentForm, MemoryOAuthProvider, OAUTH_REDIRECT as REDIRECT, postForm, toolOk as ok } from "../helpers/mcp-oauth.js";

let stack: SessionGateway;
let base: string;
/** The gateway's clock runs this far ahead of the real one (an expiry, a grace window, without waiting). */
let ahead = 0;
const clients: Client[] = [];
const opts = { [oauth.allowInsecureRequests]: true };

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "acme", scopes: ["search", "jobs"], budget: { daily: "5.00" } },
      { id: "ops", scopes: ["admin", "search"] },
    ],
    {
      modules: ["x402"],
      now: () => Date.now() + ahead,
      config: { oauth: { accessTokenTtlSeconds: 300, refreshGraceSeconds: 5 } },
    },
  );
  base = stack.gateway.url;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await stack?.close();
});

const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }) as Promise<CallToolResult>;
const asOps = () => ({ "x-api-key": stack.keys.ops!, "content-type": "application/json" });
const grantsOf = async (tenant: string) =>
  (await (await fetch(`${base}/_tollgate/grants`, { headers: { "x-api-key": stack.keys[tenant]! } })).json()).grants as any[];

/** The consent page read as a browser reads it, its form posted with the tenant's credential: the code's redirect. */
async function consent(authUrl: URL | string, credential: string, scopes = ["search"]): Promise<URLSearchParams> {
  const page = await fetch(authUrl, { redirect: "manual" });
  expect(page.status).toBe(200);
  const back = await postForm(fetch, `${base}/authorize`, consentForm(await page.text(), { credential, scopes, cap: "1.00" }));
  expect(back.status).toBe(302);
  return new URL(back.headers.get("location")!).searchParams;
}

/** The MCP SDK's whole flow (401 → discovery → registration → consent → code → tokens), connected. */
async function mcpClient(credential: string): Promise<{ client: Client; provider: MemoryOAuthProvider }> {
  const provider = new MemoryOAuthProvider("Parallel Agent");
  const url = new URL(`${base}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await expect(new Client({ name: "hosts", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  await first.finishAuth((await consent(provider.authUrl!, credential)).get("code")!);
  const client = new Client({ name: "hosts", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  clients.push(client);
  return { client, provider };
}

/** oauth4webapi: discovery, registration, PKCE, consent, the code exchange. */
async function rfcClient(credential = stack.keys.acme!) {
  const issuer = new URL(base);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }));
  const client = (await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT], client_name: "RFC Client" }, opts),
  )) as oauth.Client;
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    scope: "search",
    state,
  }).toString();
  const params = oauth.validateAuthResponse(as, client, await consent(url, credential), state);
  return { as, client, params, verifier };
}

/** The OAuth error a refused token request answered (oauth4webapi's ResponseBodyError). */
async function refusal(p: Promise<unknown>): Promise<{ error: string; status: number }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(oauth.ResponseBodyError);
  const e = err as oauth.ResponseBodyError;
  return { error: e.error, status: e.status };
}

describe("the MCP SDK's parallel tool calls across an access token's expiry", () => {
  it("all refresh with one refresh token, all get the same rotated pair, and the grant lives on", async () => {
    const { client, provider } = await mcpClient(stack.keys.acme!);
    ok(await call(client, "budget"));
    const before = provider.saved!;
    ahead += 301_000;
    // Five calls at once: each meets the expired token, each refreshes with the same refresh token (the SDK does not
    // serialise refreshes), each goes on.
    const results = await Promise.all(Array.from({ length: 5 }, () => call(client, "budget")));
    for (const r of results) expect(r.isError).toBeFalsy();
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    const grantId = ok(results[0]!).token.grant as string;
    const grant = (await grantsOf("acme")).find((g) => g.id === grantId);
    // One refresh issued (2 pairs in all), and the grant is active: no reuse was seen.
    expect(grant).toMatchObject({ state: "active", tokensIssued: 2 });
    // And it goes on refreshing: another expiry, another round of parallel calls.
    ahead += 301_000;
    const again = await Promise.all(Array.from({ length: 3 }, () => call(client, "budget")));
    for (const r of again) expect(r.isError).toBeFalsy();
    expect((await grantsOf("acme")).find((g) => g.id === grantId)).toMatchObject({ state: "active", tokensIssued: 3 });
  });
});

describe("the RFC points, with oauth4webapi", () => {
  it("a wrong code_verifier uses nothing up: the retry with the right one gets the tokens", async () => {
    const { as, client, params, verifier } = await rfcClient();
    const wrong = oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, oauth.generateRandomCodeVerifier(), opts);
    expect(await refusal(oauth.processAuthorizationCodeResponse(as, client, await wrong))).toMatchObject({ error: "invalid_grant" });
    const right = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, opts);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, right);
    expect(tokens.refresh_token).toMatch(/^tgr_/);
  });

  it("a refused refresh (wider scope, another resource) leaves the refresh token for the retry", async () => {
    const { as, client, params, verifier } = await rfcClient();
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, opts),
    );
    const refresh = (extra: Record<string, string>) =>
      oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { ...opts, additionalParameters: extra });
    const wider = await refusal(oauth.processRefreshTokenResponse(as, client, await refresh({ scope: "search jobs" })));
    expect(wider).toMatchObject({ error: "invalid_scope", status: 400 });
    const foreign = await refusal(oauth.processRefreshTokenResponse(as, client, await refresh({ resource: "https://other.example/mcp" })));
    expect(foreign).toMatchObject({ error: "invalid_target" });
    const next = await oauth.processRefreshTokenResponse(as, client, await refresh({}));
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    const [grant] = (await grantsOf("acme")).filter((g) => g.client.id === client.client_id);
    expect(grant).toMatchObject({ state: "active", tokensIssued: 2 });
  });

  it("parallel refreshes within the grace window get one pair; a reuse after it revokes the grant", async () => {
    const { as, client, params, verifier } = await rfcClient();
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, opts),
    );
    const refresh = async () =>
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts),
      );
    const pairs = await Promise.all([refresh(), refresh(), refresh(), refresh()]);
    expect(new Set(pairs.map((p) => p.refresh_token)).size).toBe(1);
    expect(new Set(pairs.map((p) => p.access_token)).size).toBe(1);
    ahead += 6_000;
    expect(await refusal(refresh())).toMatchObject({ error: "invalid_grant" });
    const grant = (await grantsOf("acme")).find((g) => g.client.id === client.client_id);
    expect(grant).toMatchObject({ state: "revoked", revokedReason: "refresh token reused" });
  });

  it("an unknown client gets invalid_client: 400 with client_id, 401 with a challenge over HTTP Basic", async () => {
    const { as } = await rfcClient();
    const ghost: oauth.Client = { client_id: "tgc_00000000000000000000000000000000" };
    const plain = await refusal(
      oauth.processRefreshTokenResponse(
        as,
        ghost,
        await oauth.refreshTokenGrantRequest(as, ghost, oauth.None(), `tgr_${"a".repeat(43)}`, opts),
      ),
    );
    expect(plain).toMatchObject({ error: "invalid_client", status: 400 });
    // Over HTTP Basic (a confidential client's habit): 401 with a Basic challenge (RFC 6749 §5.2).
    const basic = await oauth.refreshTokenGrantRequest(as, ghost, oauth.ClientSecretBasic("s3cret"), `tgr_${"a".repeat(43)}`, opts);
    expect(basic.status).toBe(401);
    expect(basic.headers.get("www-authenticate")).toMatch(/^Basic /);
    expect(await basic.json()).toMatchObject({ error: "invalid_client" });
  });

  it("a forgotten registration: /token says invalid_client, /authorize answers JSON when JSON is asked", async () => {
    const { as, client, params, verifier } = await rfcClient();
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, opts),
    );
    await stack.gateway.gateway.services.stores.kv.delete(`oauth:client:${client.client_id}`);
    const refused = await refusal(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts),
      ),
    );
    expect(refused.error).toBe("invalid_client");
    const authorize = await fetch(`${base}/authorize?response_type=code&client_id=${client.client_id}`, {
      headers: { accept: "application/json" },
      redirect: "manual",
    });
    expect(authorize.status).toBe(400);
    expect(authorize.headers.get("content-type")).toMatch(/json/);
    expect(await authorize.json()).toMatchObject({ error: "invalid_client" });
    // A browser still gets a page.
    const page = await fetch(`${base}/authorize?response_type=code&client_id=${client.client_id}`, { headers: { accept: "text/html" } });
    expect(page.headers.get("content-type")).toMatch(/html/);
  });

  it("state given twice is a 400; an error never goes to an https redirect URI a registration merely declared", async () => {
    const { challenge } = { challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()) };
    const reg = await (
      await fetch(`${base}/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "Far Away", redirect_uris: ["https://app.example/cb"] }),
      })
    ).json();
    const q = new URLSearchParams({ response_type: "code", client_id: reg.client_id, redirect_uri: "https://app.example/cb" });
    q.append("state", "a");
    q.append("state", "b");
    const twice = await fetch(`${base}/authorize?${q}`, { redirect: "manual" });
    expect(twice.status).toBe(400);
    expect(await twice.text()).toContain("state is repeated");
    // No PKCE: an error, answered here (the registration's https URI is nobody's word), not a redirect to it.
    const bad = await fetch(`${base}/authorize?response_type=code&client_id=${reg.client_id}&redirect_uri=https://app.example/cb`, {
      redirect: "manual",
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("location")).toBeNull();
    // A good request from it still gets the consent page (the tenant sees where the answer goes).
    const good = await fetch(
      `${base}/authorize?response_type=code&client_id=${reg.client_id}&redirect_uri=https://app.example/cb&code_challenge=${challenge}&code_challenge_method=S256`,
      { redirect: "manual" },
    );
    expect(good.status).toBe(200);
  });

  it("the root protected-resource metadata names the origin (RFC 9728 §3.3), /mcp's names /mcp", async () => {
    const root = await (await fetch(`${base}/.well-known/oauth-protected-resource`)).json();
    expect(root.resource).toBe(base);
    const mcp = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(mcp.resource).toBe(`${base}/mcp`);
  });
});

describe("the credential tree: a grant dies with the key that consented", () => {
  it("after the consenting key is revoked, the grant's access token and a capped token minted with it no longer pay, the grant's refresh is refused", async () => {
    // A second key of acme's: the grant is consented with it; acme's first key lives on.
    const made = await fetch(`${base}/_tollgate/admin/tenants/acme/keys`, { method: "POST", headers: asOps(), body: "{}" });
    expect(made.status).toBe(201);
    const second = await made.json();
    const { client, provider } = await mcpClient(second.key);
    ok(await call(client, "web_search", { query: "before the key goes" }));
    const grantId = ok(await call(client, "budget")).token.grant as string;
    // A capped search token minted with the same key: derived from it too.
    const capped = await (
      await fetch(`${base}/_tollgate/tokens`, {
        method: "POST",
        headers: { "x-api-key": second.key, "content-type": "application/json" },
        body: JSON.stringify({ kind: "search", cap: "0.05" }),
      })
    ).json();
    const searchWith = (token: string) =>
      fetch(`${base}/api/web/search`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "capped token" }),
      });
    expect((await searchWith(capped.token)).status).toBe(200);

    const revoked = await fetch(`${base}/_tollgate/admin/tenants/acme/keys/${second.id}`, { method: "DELETE", headers: asOps() });
    expect(revoked.status).toBe(200);
    // The access token (not expired) no longer pays: refused at /mcp as revoked.
    const direct = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${provider.saved!.access_token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "web_search", arguments: { query: "after" } } }),
    });
    expect(direct.status).toBe(401);
    expect(await direct.json()).toMatchObject({ code: "token_revoked" });
    // Its refresh is refused, and the grant is revoked for good.
    const refreshed = await postForm(fetch, `${base}/token`, {
      grant_type: "refresh_token",
      refresh_token: provider.saved!.refresh_token!,
      client_id: provider.client!.client_id,
    });
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({ error: "invalid_grant" });
    expect((await grantsOf("acme")).find((g) => g.id === grantId)).toMatchObject({
      state: "revoked",
      revokedReason: "the consenting key was revoked",
    });
    // The ledger: the one search before, nothing after.
    const ledger = await (
      await fetch(`${base}/_tollgate/ledger?kind=credits&limit=1000`, { headers: { "x-api-key": stack.keys.acme! } })
    ).json();
    expect(ledger.entries.filter((e: any) => e.grant === grantId && e.state === "committed")).toHaveLength(1);
    // The capped token minted with the key is refused too, before it pays.
    const after = await searchWith(capped.token);
    expect(after.status).toBe(401);
    expect(await after.json()).toMatchObject({ code: "token_revoked" });
    // acme's own key still works.
    expect((await fetch(`${base}/_tollgate/grants`, { headers: { "x-api-key": stack.keys.acme! } })).status).toBe(200);
  });
});
