// OIDC sign-in against a real provider (panva's oidc-provider, started here on 127.0.0.1:0 with its dev login and
// consent pages): the gateway, in front of the emulator, signs people in by authorization code + PKCE over plain HTTP
// (redirects followed, the provider's forms submitted). An admin from a group sees every tenant and changes things,
// audited under `oidc:<sub>`; a tenant user sees only its tenant (another's is 404); an unknown group gets nothing (403,
// no session); an operator-readonly group reads only; logout ends the session and the provider's (RP-initiated). The
// admin API takes the provider's JWT as a bearer. Cloudflare Access's signed header is checked against a JWKS served
// from 127.0.0.1.
import { randomBytes } from "node:crypto";
import { generateKeyPair, importJWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { roleFromClaims } from "../../src/identity/sign-in.js";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { memoryStores } from "../../src/state/memory.js";
import { startTestGateway } from "../helpers/gateway.js";
import { startAccessCerts } from "../helpers/access-certs.js";
import {
  formIn,
  HttpBrowser,
  consoleRedirects,
  operatorsOidc,
  signInAtProvider,
  startOidcProvider,
  type TestOidcProvider,
} from "../helpers/oidc-provider.js";

type Running = Awaited<ReturnType<typeof startTestGateway>>;

const USERS = {
  alice: { email: "alice@example.com", groups: ["platform-admins", "staff"] },
  olga: { email: "olga@example.com", groups: ["sre"] },
  tom: { email: "tom@acme.example", groups: ["customers"], tenant: "acme" },
  eve: { email: "eve@example.com", groups: ["marketing"] },
  // A tenant user whose tenant claim names the operators' tenant (whose keys are admin keys).
  mallory: { email: "mallory@example.com", groups: ["customers"], tenant: "ops" },
  // The auditor's address, once as the provider vouches for it and once as anyone may type it in at sign-up.
  audrey: { email: "auditor@example.com", email_verified: true, groups: [] },
  ivan: { email: "auditor@example.com", email_verified: false, groups: [] },
};
const ROLES = {
  admin: ["groups:platform-admins"],
  "operator-readonly": ["groups:sre", "email:auditor@example.com"],
  tenant: ["groups:customers"],
};

describe("OIDC sign-in against a real provider", () => {
  let emu: EmulatorHandle;
  let idp: TestOidcProvider;
  let gw: Running;
  let gwUrl = "";
  const opsKey = generateTenantKey();
  const consoleUrl = (path = "") => `${gwUrl}/_tollgate/console${path}`;

  /** Signs `user` in through the provider's login and consent pages; the page the console answers at the end. */
  async function signIn(browser: HttpBrowser, user: string) {
    const login = await browser.follow(consoleUrl("/oidc/login"));
    expect(login.url.startsWith(idp.issuer), login.url).toBe(true);
    return signInAtProvider(browser, idp, login, user);
  }
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  const admin = async (method: string, path: string, auth: Record<string, string>, body?: unknown) => {
    const res = await fetch(`${gwUrl}/_tollgate/admin${path}`, {
      method,
      headers: { ...auth, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
  };
  const auditEntries = async () =>
    (await admin("GET", "/audit?limit=200", { "x-api-key": opsKey })).json.entries as Array<Record<string, any>>;

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sandboxes"] });
    idp = await startOidcProvider({
      users: USERS,
      ...consoleRedirects(() => gwUrl),
    });
    gw = await startTestGateway(
      {
        server: { logLevel: "debug" },
        upstream: { baseUrl: emu.controlUrl },
        operators: {
          oidc: operatorsOidc(idp, ROLES, { tenantClaim: "tenant" }),
        },
        tenants: [
          { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(opsKey) }] },
          { id: "acme", keys: [{ hash: await hashTenantKey(generateTenantKey()) }] },
          { id: "globex", keys: [{ hash: await hashTenantKey(generateTenantKey()) }] },
        ],
      },
      { tokenSecret: randomBytes(32).toString("hex"), oidcClientSecret: idp.clientSecret },
    );
    gwUrl = gw.url;
  }, 60_000);
  afterAll(async () => {
    if (process.env.OIDC_TEST_LOGS) console.error(gw?.logs.join("\n"));
    await gw?.close();
    await idp?.close();
    await emu?.close();
  });

  it("signs an admin in from a group: every tenant, changes audited under oidc:<sub>, and logout ends both sessions", async () => {
    const browser = new HttpBrowser();
    const home = await signIn(browser, "alice");
    expect(home.status, home.html.slice(0, 500)).toBe(200);
    expect(home.url).toBe(consoleUrl(""));
    expect(home.html).toContain("alice@example.com (admin)");
    expect(browser.cookies(gwUrl).has("tollgate_console")).toBe(true);
    for (const id of ["acme", "globex"]) expect((await browser.follow(consoleUrl(`/tenants/${id}`))).status).toBe(200);

    // A change through the console, with the session's form token: audited with the person, not a key.
    const created = await browser.follow(consoleUrl("/tenants/globex/keys"), { form: { _csrf: csrfOf(home.html), label: "from sso" } });
    expect(created.status).toBe(201);
    const audit = await auditEntries();
    const keyLine = audit.find((e) => e.action === "key.create" && String(e.target).startsWith("key:globex/"));
    expect(keyLine?.actor).toBe("oidc:alice");
    expect(audit.find((e) => e.action === "console.login" && e.actor === "oidc:alice")?.after).toMatchObject({
      via: "oidc",
      role: "admin",
    });

    // Logout: the console's session ends, then the provider's (its end_session page, confirmed), back to sign-in.
    const out = await browser.request(consoleUrl("/logout"), { form: { _csrf: csrfOf(home.html) } });
    expect(out.status).toBe(200);
    const next = /content="0;url=([^"]+)"/.exec(await out.text())![1]!.replace(/&amp;/g, "&");
    expect(next.startsWith(`${idp.issuer}/session/end`)).toBe(true);
    expect(new URL(next).searchParams.get("client_id")).toBe(idp.clientId);
    expect(browser.cookies(gwUrl).has("tollgate_console")).toBe(false);
    const confirm = await browser.follow(next);
    const form = formIn(confirm.html, confirm.url);
    const back = await browser.follow(form.action, { form: { ...form.fields, logout: "yes" } });
    expect(back.url).toBe(consoleUrl("/login"));
    expect(back.html).toContain("Sign in with your identity provider");
    expect((await browser.request(consoleUrl(""))).headers.get("location")).toBe("/_tollgate/console/login");
    expect((await auditEntries()).some((e) => e.action === "console.logout" && e.actor === "oidc:alice")).toBe(true);
  });

  it("shows a tenant user only its own tenant: another tenant's page is 404", async () => {
    const browser = new HttpBrowser();
    const home = await signIn(browser, "tom");
    expect(home.status).toBe(200);
    expect(home.html).toContain("tom@acme.example · acme (tenant)");
    expect(home.html).not.toContain("globex");
    expect((await browser.follow(consoleUrl("/tenants/acme"))).status).toBe(200);
    expect((await browser.follow(consoleUrl("/tenants/globex"))).status).toBe(404);
    expect((await browser.follow(consoleUrl("/tenants/ops"))).status).toBe(404);
    // Admin-only forms are refused; its own keys it may manage.
    expect((await browser.follow(consoleUrl("/tenants"), { form: { _csrf: csrfOf(home.html), id: "sneaky" } })).status).toBe(403);
    expect((await browser.follow(consoleUrl("/tenants/acme/keys"), { form: { _csrf: csrfOf(home.html), label: "tom's" } })).status).toBe(
      201,
    );
    const line = (await auditEntries()).find((e) => e.action === "key.create" && String(e.target).startsWith("key:acme/"));
    expect(line?.actor).toBe("oidc:tom");
    // Its own audit page names it; an operator's actions on its tenant are shown as "admin", not by person.
    const audit = await browser.follow(consoleUrl("/audit"));
    expect(audit.html).toContain("oidc:tom");
    expect(audit.html).not.toContain("oidc:alice");
  });

  it("gives an unknown group nothing: a 403 page, no session, and the refusal audited", async () => {
    const browser = new HttpBrowser();
    const page = await signIn(browser, "eve");
    expect(page.status).toBe(403);
    expect(page.html).toContain("no role in this gateway");
    expect(browser.cookies(gwUrl).has("tollgate_console")).toBe(false);
    expect((await browser.request(consoleUrl(""))).status).toBe(303);
    expect((await auditEntries()).find((e) => e.action === "console.login.denied")?.actor).toBe("oidc:eve");
  });

  it("lets an operator-readonly group read and change nothing", async () => {
    const browser = new HttpBrowser();
    const home = await signIn(browser, "olga");
    expect(home.html).toContain("(read-only operator)");
    expect((await browser.follow(consoleUrl("/tenants/globex"))).status).toBe(200);
    expect((await browser.follow(consoleUrl("/tenants/globex/keys"), { form: { _csrf: csrfOf(home.html) } })).status).toBe(403);
  });

  it("takes the provider's JWT as a bearer on the admin API, by role, audited with the subject", async () => {
    const bearer = async (sub: string) => ({ authorization: `Bearer ${await idp.mintIdToken(sub)}` });
    expect((await admin("GET", "/tenants", await bearer("alice"))).status).toBe(200);
    const made = await admin("POST", "/tenants", await bearer("alice"), { id: "initech" });
    expect(made.status).toBe(201);
    expect((await auditEntries()).find((e) => e.action === "tenant.create" && e.target === "tenant:initech")?.actor).toBe("oidc:alice");
    expect((await admin("GET", "/tenants", await bearer("olga"))).status).toBe(200);
    expect((await admin("POST", "/tenants", await bearer("olga"), { id: "nope" })).json).toMatchObject({ code: "read_only" });
    expect((await admin("GET", "/tenants", await bearer("tom"))).status).toBe(403);
    const eve = await admin("GET", "/tenants", await bearer("eve"));
    expect([eve.status, eve.json.code]).toEqual([403, "no_role"]);
    // Wrong audience, or signed by a key the provider does not hold: 401, never a 500.
    expect((await admin("GET", "/tenants", { authorization: `Bearer ${await idp.mintIdToken("alice", "someone-else")}` })).status).toBe(
      401,
    );
    const { privateKey } = await generateKeyPair("RS256");
    const forged = await new SignJWT({ groups: ["platform-admins"] })
      .setProtectedHeader({ alg: "RS256", kid: "test-key" })
      .setIssuer(idp.issuer)
      .setSubject("mallory")
      .setAudience(idp.clientId)
      .setExpirationTime("5m")
      .sign(privateKey);
    const refused = await admin("GET", "/tenants", { authorization: `Bearer ${forged}` });
    expect([refused.status, refused.json.code]).toEqual([401, "invalid_identity_token"]);
    // An HMAC JWT (the shape of the gateway's own tokens) is not taken for the provider's: the key check refuses it.
    const hmac = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("x").sign(new Uint8Array(32));
    const asKey = await admin("GET", "/tenants", { authorization: `Bearer ${hmac}` });
    expect(asKey.status).toBe(401);
    expect(asKey.json.code).not.toBe("invalid_identity_token");
    // Keys stay for automation.
    expect((await admin("GET", "/tenants", { "x-api-key": opsKey })).status).toBe(200);
  });

  it("never makes a tenant user an operator: a tenant claim naming the operators' tenant gives that tenant's own rights only", async () => {
    const browser = new HttpBrowser();
    const home = await signIn(browser, "mallory");
    expect(home.status, home.html.slice(0, 300)).toBe(200);
    expect(home.html).toContain("mallory@example.com · ops (tenant)");
    expect(home.html).not.toContain("(admin)");
    // No other tenant's page, no admin form, no key for another tenant.
    expect((await browser.follow(consoleUrl("/tenants/acme"))).status).toBe(404);
    expect((await browser.follow(consoleUrl("/tenants/acme/keys"), { form: { _csrf: csrfOf(home.html), label: "x" } })).status).toBe(404);
    expect((await browser.follow(consoleUrl("/tenants"), { form: { _csrf: csrfOf(home.html), id: "sneaky" } })).status).toBe(403);
    expect(
      (await auditEntries()).some(
        (e) => e.action === "key.create" && e.actor === "oidc:mallory" && !String(e.target).startsWith("key:ops/"),
      ),
    ).toBe(false);
    expect((await auditEntries()).find((e) => e.action === "console.login" && e.actor === "oidc:mallory")?.after).toMatchObject({
      role: "tenant",
    });
    // The admin API says the same of the same person.
    const api = await admin("GET", "/tenants", { authorization: `Bearer ${await idp.mintIdToken("mallory")}` });
    expect([api.status, api.json.code]).toEqual([403, "missing_scope"]);
    expect((await admin("POST", "/tenants", { authorization: `Bearer ${await idp.mintIdToken("mallory")}` }, { id: "m" })).status).toBe(
      403,
    );
    expect((await admin("GET", "/config/export", { authorization: `Bearer ${await idp.mintIdToken("mallory")}` })).status).toBe(403);
  });

  it("maps an email rule only for a verified email, on the console and the admin API alike", async () => {
    const verified = new HttpBrowser();
    const home = await signIn(verified, "audrey");
    expect(home.status).toBe(200);
    expect(home.html).toContain("(read-only operator)");
    const unverified = new HttpBrowser();
    const page = await signIn(unverified, "ivan");
    expect(page.status).toBe(403);
    expect(page.html).toContain("no role in this gateway");
    expect(unverified.cookies(gwUrl).has("tollgate_console")).toBe(false);
    expect((await admin("GET", "/tenants", { authorization: `Bearer ${await idp.mintIdToken("audrey")}` })).status).toBe(200);
    const ivan = await admin("GET", "/tenants", { authorization: `Bearer ${await idp.mintIdToken("ivan")}` });
    expect([ivan.status, ivan.json.code]).toEqual([403, "no_role"]);
  });

  it("logs no client secret, code, ID token or session id", async () => {
    const text = gw.logs.join("\n");
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toContain(idp.clientSecret);
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/);
    expect(text).not.toMatch(/[?&]code=/);
    expect(text).not.toMatch(/tollgate_console=/);
  });

  it("refuses a callback it did not start and a tampered state without a crash", async () => {
    const browser = new HttpBrowser();
    const stray = await browser.follow(consoleUrl("/oidc/callback?code=abc&state=xyz"));
    expect(stray.status).toBe(400);
    const start = await browser.request(consoleUrl("/oidc/login"));
    expect(start.status).toBe(302);
    const auth = new URL(start.headers.get("location")!);
    expect(auth.searchParams.get("code_challenge_method")).toBe("S256");
    const bad = await browser.follow(consoleUrl(`/oidc/callback?code=abc&state=not-${auth.searchParams.get("state")}`));
    expect(bad.status).toBe(401);
    expect(bad.html).toContain("Sign-in with the identity provider failed");
  });
});

describe("a provider that cannot be reached", () => {
  it("answers 502 identity_provider_unavailable (a page on the console, JSON on the admin API), never a 500", async () => {
    const gw = await startTestGateway(
      {
        server: { logLevel: "error" },
        upstream: { baseUrl: "http://127.0.0.1:9" },
        operators: { oidc: { issuer: "http://127.0.0.1:9/realms/x", clientId: "c", roles: ROLES } },
        tenants: [],
      },
      { tokenSecret: randomBytes(32).toString("hex") },
    );
    try {
      const page = await fetch(`${gw.url}/_tollgate/console/oidc/login`, { redirect: "manual" });
      expect(page.status).toBe(502);
      expect(await page.text()).toContain("identity provider could not be reached");
      const { privateKey } = await generateKeyPair("ES256");
      const jwt = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject("x").sign(privateKey);
      const api = await fetch(`${gw.url}/_tollgate/admin/tenants`, { headers: { authorization: `Bearer ${jwt}` } });
      expect([api.status, ((await api.json()) as { code: string }).code]).toEqual([502, "identity_provider_unavailable"]);
    } finally {
      await gw.close();
    }
  });
});

describe("the client secret's one holder", () => {
  it("is held by nothing enumerable in the gateway's services", async () => {
    const secret = "oidc-client-secret-0123456789abcdef";
    const config = parseConfig({
      server: { logLevel: "error" },
      operators: { oidc: { issuer: "https://idp.example.com", clientId: "c", roles: ROLES } },
    });
    const gateway = createGateway(config, { secrets: { oidcClientSecret: secret }, stores: memoryStores(Date.now), logSink: () => {} });
    const seen = new WeakSet<object>();
    const holders: string[] = [];
    const walk = (v: unknown, path: string, depth: number) => {
      if (typeof v === "string") return void (v.includes(secret) && holders.push(path));
      if (!v || typeof v !== "object" || depth > 12 || seen.has(v)) return;
      seen.add(v);
      if (v instanceof Map) for (const [k, x] of v) walk(x, `${path}.get(${String(k)})`, depth + 1);
      else for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`, depth + 1);
    };
    walk(gateway.services, "services", 0);
    expect(holders).toEqual([]);
    expect(gateway.services.signIn?.oidc).toBeDefined();
    await gateway.close?.();
  });
});

describe("role mapping and config", () => {
  it("maps groups and claims by rule, admin first, a tenant only with its claim", () => {
    const roles = { admin: ["groups:a"], "operator-readonly": ["custom.team:sre"], tenant: ["tenant:*"] };
    expect(roleFromClaims({ groups: ["x", "a"], tenant: "acme" }, roles, "tenant")).toEqual({ role: "admin" });
    expect(roleFromClaims({ custom: { team: "sre" } }, roles, "tenant")).toEqual({ role: "readonly" });
    expect(roleFromClaims({ tenant: "acme" }, roles, "tenant")).toEqual({ role: "tenant", tenant: "acme" });
    expect(roleFromClaims({ tenant: "" }, roles, "tenant")).toBeUndefined();
    expect(roleFromClaims({ groups: ["b"] }, roles, "tenant")).toBeUndefined();
    // Email rules need the provider to vouch for the address (email_verified: true, the boolean).
    const byEmail = { admin: ["email:a@x.example"], "operator-readonly": ["org.email:r@x.example"], tenant: [] };
    expect(roleFromClaims({ email: "a@x.example" }, byEmail, "tenant")).toBeUndefined();
    expect(roleFromClaims({ email: "a@x.example", email_verified: "true" }, byEmail, "tenant")).toBeUndefined();
    expect(roleFromClaims({ email: "a@x.example", email_verified: true }, byEmail, "tenant")).toEqual({ role: "admin" });
    expect(roleFromClaims({ org: { email: "r@x.example", email_verified: true } }, byEmail, "tenant")).toEqual({ role: "readonly" });
    expect(roleFromClaims({ org: { email: "r@x.example" }, email_verified: true }, byEmail, "tenant")).toBeUndefined();
    // Cloudflare Access authenticated the email itself: its assertions carry no email_verified and need none.
    expect(roleFromClaims({ email: "a@x.example" }, byEmail, "tenant")).toBeUndefined();
    expect(roleFromClaims({ email: "a@x.example" }, byEmail, "tenant", true)).toEqual({ role: "admin" });
  });

  it("names the exact field of a wrong [operators.oidc] or [operators.access]", () => {
    const problems = (operators: unknown) => {
      try {
        parseConfig({ operators });
        return [];
      } catch (err) {
        return (err as { problems: string[] }).problems;
      }
    };
    expect(problems({ oidc: { issuer: "http://idp.example.com", clientId: "c" } })[0]).toMatch(/^operators\.oidc\.issuer: /);
    expect(problems({ oidc: { issuer: "https://idp.example.com", clientId: "c", roles: { admin: ["platform-admins"] } } })[0]).toMatch(
      /^operators\.oidc\.roles\.admin\[0\]: expected "<claim>:<value>"/,
    );
    expect(
      problems({ oidc: { issuer: "https://idp.example.com", clientId: "c", clientSecretEnv: "A", clientSecretFile: "/x" } })[0],
    ).toMatch(/^operators\.oidc\.clientSecretFile: /);
    expect(problems({ oidc: { issuer: "https://idp.example.com", clientId: "c", scope: ["openid"] } })[0]).toMatch(
      /^operators\.oidc\.scope: unknown option/,
    );
    expect(problems({ access: { teamDomain: "team.cloudflareaccess.com" } })[0]).toMatch(/^operators\.access\.aud: required/);
    expect(problems({ oidc: { issuer: "https://idp.example.com", clientId: "c" } })).toEqual([]);
  });
});

describe("Cloudflare Access's signed header (JWKS served from 127.0.0.1)", () => {
  let certs: Awaited<ReturnType<typeof startAccessCerts>>;
  let gw: Running;
  let sign: (claims: Record<string, unknown>, aud?: string) => Promise<string>;
  const AUD = "a1b2c3d4e5f6";

  beforeAll(async () => {
    certs = await startAccessCerts();
    const key = await importJWK(certs.privateJwk, "RS256");
    sign = (claims, aud = AUD) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: "access-1" })
        .setIssuer(certs.teamDomain)
        .setAudience(aud)
        .setSubject(String(claims.sub))
        .setExpirationTime("5m")
        .sign(key);
    gw = await startTestGateway(
      {
        server: { logLevel: "error" },
        upstream: { baseUrl: "http://127.0.0.1:9" },
        operators: { access: { teamDomain: certs.teamDomain, aud: AUD, roles: ROLES } },
        tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(generateTenantKey()) }] }],
      },
      { tokenSecret: randomBytes(32).toString("hex") },
    );
  });
  afterAll(async () => {
    if (process.env.OIDC_TEST_LOGS) console.error(gw?.logs.join("\n"));
    await gw?.close();
    await certs?.close();
  });

  const get = (path: string, assertion?: string) =>
    fetch(`${gw.url}/_tollgate${path}`, { headers: assertion ? { "cf-access-jwt-assertion": assertion } : {}, redirect: "manual" });

  it("admits a mapped identity on the console and the admin API, and refuses a wrong AUD or an unmapped group", async () => {
    const alice = await sign({ sub: "u-1", email: "alice@example.com", groups: ["platform-admins"] });
    const page = await get("/console", alice);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("alice@example.com (admin)");
    expect(page.headers.getSetCookie().some((c) => c.startsWith("tollgate_console="))).toBe(true);
    expect((await get("/admin/tenants", alice)).status).toBe(200);
    const wrongAud = await get("/admin/tenants", await sign({ sub: "u-1", groups: ["platform-admins"] }, "other-app"));
    expect([wrongAud.status, ((await wrongAud.json()) as { code: string }).code]).toEqual([401, "invalid_access_token"]);
    const nobody = await sign({ sub: "u-2", groups: ["marketing"] });
    expect((await get("/console", nobody)).status).toBe(403);
    expect((await get("/admin/tenants", nobody)).status).toBe(403);
    expect((await get("/console")).status).toBe(303); // no header, no session: sign in
  });
});
