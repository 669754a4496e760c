// The consent page signs the tenant in through the operators' identity provider (panva's oidc-provider on 127.0.0.1:0,
// driven over HTTP as in test/operators/oidc-sign-in.test.ts): the MCP SDK client's auth() registers and is sent to
// the consent page; "Sign in with <provider>" runs the console's OIDC code + PKCE flow bound to the pending request;
// a tenant user comes back signed in as its tenant (a single-use ticket), consents, and the client's tokens act for
// that tenant, the consent audited under `oidc:<sub>`. An operator, or an account with no role, is refused (403).
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
  formIn,
  HttpBrowser,
  consoleRedirects,
  operatorsOidc,
  signInAtProvider,
  startOidcProvider,
  type TestOidcProvider,
} from "../helpers/oidc-provider.js";
import { consentHidden, MemoryOAuthProvider, OAUTH_REDIRECT as REDIRECT, postForm, toolJson } from "../helpers/mcp-oauth.js";
const USERS = {
  tom: { email: "tom@acme.example", groups: ["customers"], tenant: "acme" },
  olga: { email: "olga@example.com", groups: ["sre"] },
  eve: { email: "eve@example.com", groups: ["marketing"] },
};
const ROLES = { admin: ["groups:platform-admins"], "operator-readonly": ["groups:sre"], tenant: ["groups:customers"] };

class TestProvider extends MemoryOAuthProvider {
  constructor() {
    super("SSO Agent");
  }
}

describe("the consent page signs in through the identity provider", () => {
  let emu: EmulatorHandle;
  let idp: TestOidcProvider;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let gwUrl = "";
  const opsKey = generateTenantKey();
  const clients: Client[] = [];

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sandboxes"] });
    idp = await startOidcProvider({
      users: USERS,
      ...consoleRedirects(() => gwUrl),
    });
    gw = await startTestGateway(
      {
        upstream: { baseUrl: emu.controlUrl },
        operators: {
          oidc: operatorsOidc(idp, ROLES),
        },
        tenants: [
          { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(opsKey) }] },
          {
            id: "acme",
            scopes: ["sandboxes"],
            keys: [{ hash: await hashTenantKey(generateTenantKey()) }],
            agentPolicies: { "node-only": { images: ["node"] } },
          },
        ],
      },
      { tokenSecret: randomBytes(32).toString("hex"), oidcClientSecret: idp.clientSecret },
    );
    gwUrl = gw.url;
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await gw?.close();
    await idp?.close();
    await emu?.close();
  });

  /** The MCP client's first connect: 401, discovery, registration; the consent page's URL. */
  async function authorizationUrl(provider: TestProvider): Promise<string> {
    const first = new StreamableHTTPClientTransport(new URL(`${gwUrl}/mcp`), { authProvider: provider });
    await expect(new Client({ name: "sso-test", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.client?.client_id).toMatch(/^tgc_/);
    return provider.authUrl!.href;
  }

  /** Opens the consent page, clicks "Sign in with <provider>" and signs `user` in there; the page it comes back to. */
  async function signInOnConsent(browser: HttpBrowser, authUrl: string, user: string) {
    const page = await browser.follow(authUrl);
    expect(page.status).toBe(200);
    const host = new URL(idp.issuer).host;
    expect(page.html).toContain(`Sign in with ${host}`);
    const start = /<a class="button" href="([^"]+)"/.exec(page.html)![1]!.replace(/&amp;/g, "&");
    const login = await browser.follow(new URL(start, gwUrl).href);
    expect(login.url.startsWith(idp.issuer), login.url).toBe(true);
    return signInAtProvider(browser, idp, login, user);
  }
  const auditEntries = async () =>
    (await (await fetch(`${gwUrl}/_tollgate/admin/audit?limit=200`, { headers: { "x-api-key": opsKey } })).json()).entries as Array<
      Record<string, any>
    >;

  it("a tenant user consents for its tenant: tokens for acme, a tool call works, the consent audited as oidc:tom", async () => {
    const provider = new TestProvider();
    const authUrl = await authorizationUrl(provider);
    const browser = new HttpBrowser();
    const back = await signInOnConsent(browser, authUrl, "tom");
    expect(back.status, back.html.slice(0, 400)).toBe(200);
    expect(new URL(back.url).pathname).toBe("/authorize");
    expect(back.html).toContain("Signed in as <strong>tom@acme.example</strong> for tenant <strong>acme</strong>");
    expect(back.html).not.toContain('name="credential"');
    // Signed in, the tenant is known: its named agent policies are offered as a choice (docs/agent-policies.md#grants).
    expect(back.html).toContain('<select name="agent_policy">');
    expect(back.html).toContain('<option value="node-only">node-only</option>');
    // No console session was started by it.
    expect(browser.cookies(gwUrl).has("tollgate_console")).toBe(false);

    const { tools_shown: _all, ...fields } = formIn(back.html, back.url).fields; // no tool boxes: every tool of the scope
    expect(fields.ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const form = { ...fields, scope: "sandboxes", cap: "1.00", window: "total", days: "7", action: "allow" };
    const res = await browser.request(`${gwUrl}/authorize`, { form });
    expect(res.status, await res.clone().text()).toBe(302);
    const loc = new URL(res.headers.get("location")!);
    expect(`${loc.origin}${loc.pathname}`).toBe(REDIRECT);
    await new StreamableHTTPClientTransport(new URL(`${gwUrl}/mcp`), { authProvider: provider }).finishAuth(loc.searchParams.get("code")!);
    expect(provider.saved?.access_token).toBeTruthy();

    const client = new Client({ name: "sso-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gwUrl}/mcp`), { authProvider: provider }));
    clients.push(client);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("budget");
    const budget = (await client.callTool({ name: "budget", arguments: {} })) as CallToolResult;
    expect(budget.isError).toBeFalsy();
    const view = toolJson(budget);
    expect(view.token).toMatchObject({ cap: "1.00" });
    expect(view.token.grant).toMatch(/^grt_/);
    expect(JSON.stringify(view)).toContain("acme");

    const line = (await auditEntries()).find((e) => e.action === "grant.consent");
    expect(line).toMatchObject({ actor: "oidc:tom", target: `grant:acme/${view.token.grant}` });

    // The ticket was used up: the same form again is refused, no second code.
    const again = await browser.request(`${gwUrl}/authorize`, { form });
    expect(again.status).toBe(400);
  });

  it("refuses an operator and an account with no role: a 403 page, the refusal audited, nothing to consent with", async () => {
    for (const [user, words] of [
      ["olga", "operator"],
      ["eve", "no role in this gateway"],
    ] as const) {
      const provider = new TestProvider();
      const authUrl = await authorizationUrl(provider);
      const browser = new HttpBrowser();
      const page = await signInOnConsent(browser, authUrl, user);
      expect(page.status).toBe(403);
      expect(page.html).toContain("This account cannot connect an agent");
      expect(page.html).toContain(words);
      expect(page.html).not.toContain('name="ticket"');
      expect(browser.cookies(gwUrl).has("tollgate_console")).toBe(false);
      const line = (await auditEntries()).find((e) => e.action === "oauth.consent.denied" && e.actor === `oidc:${user}`);
      expect(line?.after).toMatchObject({ via: "oidc" });
    }
  });

  it("a forged or stale ticket shows no signed-in page and posts nothing", async () => {
    const provider = new TestProvider();
    const authUrl = await authorizationUrl(provider);
    const { request, _csrf } = consentHidden(await (await fetch(authUrl)).text());
    const forged = "A".repeat(43);
    expect((await fetch(`${gwUrl}/authorize?request=${request}&ticket=${forged}`)).status).toBe(400);
    expect((await fetch(`${gwUrl}/authorize?request=nope&signin=oidc`)).status).toBe(400);
    const post = await postForm(fetch, `${gwUrl}/authorize`, {
      request,
      _csrf,
      ticket: forged,
      scope: "sandboxes",
      cap: "1.00",
      window: "total",
      days: "7",
      action: "allow",
    });
    expect(post.status).toBe(400);
  });
});
