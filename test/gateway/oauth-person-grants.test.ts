// A grant a PERSON consented is bound to that person (docs/security.md#the-credential-tree): it lives while the identity
// provider's word on them still makes them a user of its tenant, and dies when it no longer does. Driven with panva's
// oidc-provider (the users' claims read live, so the test changes a person's groups or tenant as a directory would),
// the official MCP SDK client as the grant's client (registration, consent through "Sign in with <provider>", tool
// calls), and the gateway's HTTP rows, MCP and console:
// - the provider drops the person from the tenant's group: their next sign-in (the console's) revokes the grant at
//   once: the access token refused on an HTTP row and on /mcp, the refresh refused, the console session of the old
//   role ended;
// - the person's tenant claim moves to another tenant: their next sign-in (a consent page's) ends the old tenant's grant;
// - an operator lists a person's grants and revokes them all (the admin API);
// - a person who does not sign in again for oauth.personReconfirmSeconds: the refresh is refused (not consumed), no
//   access token outlives that moment, and once they sign in again the same refresh token works.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";
import {
  consoleRedirects,
  formIn,
  HttpBrowser,
  operatorsOidc,
  signInAtProvider,
  startOidcProvider,
  type TestOidcProvider,
  type TestUser,
} from "../helpers/oidc-provider.js";
import { MemoryOAuthProvider, OAUTH_REDIRECT as REDIRECT, refreshWith, toolJson } from "../helpers/mcp-oauth.js";

const ROLES = { admin: ["groups:platform-admins"], "operator-readonly": ["groups:sre"], tenant: ["groups:customers"] };

async function startStack(users: Record<string, TestUser>, oauth: Record<string, unknown> = {}) {
  const stack = { gwUrl: "", opsKey: generateTenantKey() } as {
    gwUrl: string;
    opsKey: string;
    emu: EmulatorHandle;
    idp: TestOidcProvider;
    gw: Awaited<ReturnType<typeof startTestGateway>>;
  };
  stack.emu = await startEmulator({ modules: ["sandboxes"] });
  stack.idp = await startOidcProvider({ users, ...consoleRedirects(() => stack.gwUrl) });
  stack.gw = await startTestGateway(
    {
      upstream: { baseUrl: stack.emu.controlUrl },
      server: { logLevel: "error" },
      operators: { oidc: operatorsOidc(stack.idp, ROLES) },
      oauth,
      tenants: [
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(stack.opsKey) }] },
        { id: "acme", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(generateTenantKey()) }] },
        { id: "globex", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(generateTenantKey()) }] },
      ],
    },
    { tokenSecret: randomBytes(32).toString("hex"), oidcClientSecret: stack.idp.clientSecret, upstreamApiKey: stack.emu.apiKey },
  );
  stack.gwUrl = stack.gw.url;
  return stack;
}
type Stack = Awaited<ReturnType<typeof startStack>>;

/** The MCP client's first connect: 401, discovery, registration; the consent page's URL. */
async function authorizationUrl(s: Stack, provider: MemoryOAuthProvider): Promise<string> {
  const first = new StreamableHTTPClientTransport(new URL(`${s.gwUrl}/mcp`), { authProvider: provider });
  await expect(new Client({ name: "person-test", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  return provider.authUrl!.href;
}

/** Opens the consent page, follows "Sign in with <provider>" and signs `user` in there; the page it comes back to. */
async function signInOnConsent(s: Stack, browser: HttpBrowser, authUrl: string, user: string) {
  const page = await browser.follow(authUrl);
  expect(page.status).toBe(200);
  const start = /<a class="button" href="([^"]+)"/.exec(page.html)![1]!.replace(/&amp;/g, "&");
  const login = await browser.follow(new URL(start, s.gwUrl).href);
  expect(login.url.startsWith(s.idp.issuer), login.url).toBe(true);
  return signInAtProvider(browser, s.idp, login, user);
}

/** `user` signs in to the console through the provider in a browser of their own; the page it ends on. */
async function consoleSignIn(s: Stack, user: string, browser = new HttpBrowser()) {
  const login = await browser.follow(`${s.gwUrl}/_tollgate/console/oidc/login`);
  expect(login.url.startsWith(s.idp.issuer), login.url).toBe(true);
  const page = await signInAtProvider(browser, s.idp, login, user);
  return { browser, page };
}

/** `user` connects an MCP client: consent through the provider, the code exchanged by the SDK; its client and grant. */
async function connectAs(s: Stack, user: string) {
  const provider = new MemoryOAuthProvider("Person Agent");
  const authUrl = await authorizationUrl(s, provider);
  const browser = new HttpBrowser();
  const back = await signInOnConsent(s, browser, authUrl, user);
  expect(back.status, back.html.slice(0, 400)).toBe(200);
  const { tools_shown: _all, ...fields } = formIn(back.html, back.url).fields;
  const res = await browser.request(`${s.gwUrl}/authorize`, {
    form: { ...fields, scope: "sandboxes", cap: "1.00", window: "total", days: "7", action: "allow" },
  });
  expect(res.status, await res.clone().text()).toBe(302);
  const loc = new URL(res.headers.get("location")!);
  expect(`${loc.origin}${loc.pathname}`).toBe(REDIRECT);
  await new StreamableHTTPClientTransport(new URL(`${s.gwUrl}/mcp`), { authProvider: provider }).finishAuth(loc.searchParams.get("code")!);
  const client = new Client({ name: "person-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${s.gwUrl}/mcp`), { authProvider: provider }));
  const budget = (await client.callTool({ name: "budget", arguments: {} })) as CallToolResult;
  expect(budget.isError).toBeFalsy();
  const grant = toolJson(budget).token.grant as string;
  expect(grant).toMatch(/^grt_/);
  return { provider, client, grant };
}

/** An HTTP row with the grant's access token: the tenant's sandboxes. */
const listSandboxes = (s: Stack, token: string) => fetch(`${s.gwUrl}/api/sandboxes`, { headers: { authorization: `Bearer ${token}` } });

describe("a grant a person consented lives while the provider still makes them the tenant's user", () => {
  const users: Record<string, TestUser> = {
    tom: { email: "tom@acme.example", groups: ["customers"], tenant: "acme" },
    ann: { email: "ann@acme.example", groups: ["customers"], tenant: "acme" },
    pat: { email: "pat@acme.example", groups: ["customers"], tenant: "acme" },
  };
  let s: Stack;
  const clients: Client[] = [];
  const asOps = () => ({ "x-api-key": s.opsKey });

  beforeAll(async () => {
    s = await startStack(users);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await s?.gw.close();
    await s?.idp.close();
    await s?.emu.close();
  });

  it("the provider drops tom from the tenant's group: his next sign-in ends the grant on every surface, and his console session", async () => {
    const { provider, client, grant } = await connectAs(s, "tom");
    clients.push(client);
    const access = provider.saved!.access_token;
    const refresh = provider.saved!.refresh_token!;
    expect((await listSandboxes(s, access)).status).toBe(200);
    // Tom's console session, as a tenant user of acme.
    const { browser: tomsConsole } = await consoleSignIn(s, "tom");
    const consolePage = () => tomsConsole.request(`${s.gwUrl}/_tollgate/console`);
    expect((await consolePage()).status).toBe(200);
    // The console's grants page names who consented.
    const grantsPage = await (await tomsConsole.request(`${s.gwUrl}/_tollgate/console/grants`)).text();
    expect(grantsPage).toContain(`data-consented-by="oidc:tom"`);

    // The directory moves tom out of "customers"; the gateway learns it at his next sign-in (here, another browser).
    users.tom!.groups = ["marketing"];
    const { page } = await consoleSignIn(s, "tom");
    expect(page.status).toBe(403);
    const learnedAt = Date.now();

    // The access token: refused on an HTTP row and on /mcp (at once on this instance: the grant's revocation).
    const row = await listSandboxes(s, access);
    expect(row.status).toBe(401);
    expect((await row.json()).code).toBe("token_revoked");
    const took = Date.now() - learnedAt;
    expect(took).toBeLessThan(2_000);
    // The MCP SDK's call: refused; its refresh refused too, so it is sent back to consent.
    await expect(client.callTool({ name: "budget", arguments: {} })).rejects.toThrow();
    const again = await refreshWith(fetch, s.gwUrl, refresh, (provider.client as { client_id: string }).client_id);
    expect(again.status).toBe(400);
    expect((await again.json()).error).toBe("invalid_grant");
    // The console session opened as acme's user ends too.
    const after = await consolePage();
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toContain("/login");

    // The admin API shows who made it and why it ended.
    const listed = (await (await fetch(`${s.gwUrl}/_tollgate/admin/grants?person=oidc:tom`, { headers: asOps() })).json()).grants;
    const g = listed.find((x: { id: string }) => x.id === grant);
    expect(g).toMatchObject({ state: "revoked", consentedBy: { person: "oidc:tom", role: "tenant" } });
    expect(g.revokedReason).toContain("no longer may consent for tenant acme");

    // Back in the group, a new sign-in does not bring the revoked grant back.
    users.tom!.groups = ["customers"];
    expect((await consoleSignIn(s, "tom")).page.status).toBe(200);
    expect((await listSandboxes(s, access)).status).toBe(401);
  }, 120_000);

  it("ann's tenant claim moves to globex: her next sign-in (a consent page's) ends her acme grant", async () => {
    const { provider, client, grant } = await connectAs(s, "ann");
    clients.push(client);
    const access = provider.saved!.access_token;
    expect((await listSandboxes(s, access)).status).toBe(200);
    users.ann!.tenant = "globex";
    // Another agent's consent: she signs in, now as globex's user; the acme grant ends at that sign-in.
    const other = new MemoryOAuthProvider("Other Agent");
    const back = await signInOnConsent(s, new HttpBrowser(), await authorizationUrl(s, other), "ann");
    expect(back.html).toContain("for tenant <strong>globex</strong>");
    const row = await listSandboxes(s, access);
    expect(row.status).toBe(401);
    const g = (await (await fetch(`${s.gwUrl}/_tollgate/admin/grants?tenant=acme`, { headers: asOps() })).json()).grants.find(
      (x: { id: string }) => x.id === grant,
    );
    expect(g.state).toBe("revoked");
  }, 120_000);

  it("an operator lists what a person consented and revokes it all", async () => {
    const one = await connectAs(s, "pat");
    const two = await connectAs(s, "pat");
    clients.push(one.client, two.client);
    const listed = (await (await fetch(`${s.gwUrl}/_tollgate/admin/grants?person=oidc:pat`, { headers: asOps() })).json()).grants;
    expect(listed.map((g: { id: string }) => g.id).sort()).toEqual([one.grant, two.grant].sort());
    expect(listed.every((g: { state: string }) => g.state === "active")).toBe(true);
    // A malformed person is a 400 naming the field; a tenant key is not an operator.
    const bad = await fetch(`${s.gwUrl}/_tollgate/admin/grants?person=tom`, { method: "DELETE", headers: asOps() });
    expect(bad.status).toBe(400);
    expect((await bad.json()).field).toBe("person");

    const del = await fetch(`${s.gwUrl}/_tollgate/admin/grants?person=oidc:pat`, { method: "DELETE", headers: asOps() });
    expect(del.status).toBe(200);
    const body = await del.json();
    expect(body.person).toBe("oidc:pat");
    expect(body.revoked.map((g: { id: string }) => g.id).sort()).toEqual([one.grant, two.grant].sort());
    for (const { provider } of [one, two]) expect((await listSandboxes(s, provider.saved!.access_token)).status).toBe(401);
    const audit = (await (await fetch(`${s.gwUrl}/_tollgate/admin/audit?limit=50`, { headers: asOps() })).json()).entries;
    expect(audit.find((e: { action: string }) => e.action === "grant.revoke.person")).toMatchObject({ target: "user:oidc:pat" });
  }, 120_000);
});

describe("a person who does not sign in again within oauth.personReconfirmSeconds", () => {
  const users: Record<string, TestUser> = { tom: { email: "tom@acme.example", groups: ["customers"], tenant: "acme" } };
  const RECONFIRM = 8;
  let s: Stack;
  let client: Client | undefined;

  beforeAll(async () => {
    s = await startStack(users, { personReconfirmSeconds: RECONFIRM });
  }, 60_000);
  afterAll(async () => {
    await client?.close().catch(() => {});
    await s?.gw.close();
    await s?.idp.close();
    await s?.emu.close();
  });

  it("cannot refresh (the refresh token is kept), no access token outlives it; once they sign in, the same refresh works", async () => {
    const connected = await connectAs(s, "tom");
    client = connected.client;
    const { provider } = connected;
    const clientId = (provider.client as { client_id: string }).client_id;
    // The access token lives no longer than the person's word (signed in moments ago).
    expect(provider.saved!.expires_in).toBeLessThanOrEqual(RECONFIRM);
    const refresh = provider.saved!.refresh_token!;
    const access = provider.saved!.access_token;
    await new Promise((r) => setTimeout(r, RECONFIRM * 1000 + 500));
    expect((await listSandboxes(s, access)).status).toBe(401);
    const refused = await refreshWith(fetch, s.gwUrl, refresh, clientId);
    expect(refused.status).toBe(400);
    const body = await refused.json();
    expect(body.error).toBe("invalid_grant");
    expect(body.error_description).toContain("sign in again");

    // Tom signs in to the console: still acme's user. The refresh token, not used up by the refusal, works.
    expect((await consoleSignIn(s, "tom")).page.status).toBe(200);
    const ok = await refreshWith(fetch, s.gwUrl, refresh, clientId);
    expect(ok.status, await ok.clone().text()).toBe(200);
    const pair = await ok.json();
    expect(pair.expires_in).toBeLessThanOrEqual(RECONFIRM);
    expect((await listSandboxes(s, pair.access_token)).status).toBe(200);
  }, 120_000);
});
