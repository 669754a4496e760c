// A real OpenID Connect provider for tests (panva's oidc-provider, its dev login and consent pages) on 127.0.0.1:0,
// with a few users carrying groups and a tenant claim, one confidential client, and a signing key the test holds too
// (so it can mint a JWT the provider's JWKS vouches for, as an automation client would get one).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import Provider from "oidc-provider";

export interface TestUser {
  groups: string[];
  tenant?: string;
  email: string;
  /** The provider vouches for the address (OIDC's `email_verified`); left out, the claim is not sent. */
  email_verified?: boolean;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** A JWT signed with the provider's own key (as its ID tokens are), for the admin API's bearer. */
  mintIdToken(sub: string, audience?: string): Promise<string>;
  close(): Promise<void>;
}

export async function startOidcProvider(opts: {
  users: Record<string, TestUser>;
  /** The relying party's redirect and post-logout URIs (the gateway's), read on the first request. */
  redirectUris: () => string[];
  postLogoutRedirectUris: () => string[];
}): Promise<TestOidcProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  // Made on the first request: the relying party's URIs are known by then (its config needs this issuer first).
  const server = createServer((req, res) => (handler ??= makeProvider())(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = "tollgate-console";
  const clientSecret = randomBytes(24).toString("hex");
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: "test-key", alg: "RS256", use: "sig" };

  const makeProvider = () => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: opts.redirectUris(),
          post_logout_redirect_uris: opts.postLogoutRedirectUris(),
          grant_types: ["authorization_code"],
          response_types: ["code"],
        },
      ],
      jwks: { keys: [jwk as never] },
      cookies: { keys: [randomBytes(16).toString("hex")] },
      claims: { openid: ["sub", "groups", "tenant"], email: ["email", "email_verified"] },
      features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
      async findAccount(_ctx, id) {
        const user = opts.users[id];
        if (!user) return undefined;
        return { accountId: id, claims: async () => ({ sub: id, ...user }) };
      },
    });
    // The provider warns about its dev interactions and keys on stderr; a test expects exactly those.
    provider.on("server_error", (_ctx, err) => console.error("oidc-provider server_error", err));
    return provider.callback();
  };

  return {
    issuer,
    clientId,
    clientSecret,
    async mintIdToken(sub, audience = clientId) {
      return new SignJWT({ ...(opts.users[sub] ?? {}) })
        .setProtectedHeader({ alg: "RS256", kid: "test-key" })
        .setIssuer(issuer)
        .setSubject(sub)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A browser over plain HTTP: a cookie jar per origin (names only: every cookie of an origin is sent to it), redirects
 * followed by hand (so each hop's cookies are kept), and the pages' forms and meta refreshes read from their HTML.
 */
export class HttpBrowser {
  private jars = new Map<string, Map<string, string>>();

  cookies(origin: string): Map<string, string> {
    let jar = this.jars.get(origin);
    if (!jar) this.jars.set(origin, (jar = new Map()));
    return jar;
  }

  async request(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const u = new URL(url);
    const jar = this.cookies(u.origin);
    const headers: Record<string, string> = {};
    if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    if (init.form) {
      headers["content-type"] = "application/x-www-form-urlencoded";
      headers.origin = u.origin;
    }
    const res = await fetch(url, {
      method: init.method ?? (init.form ? "POST" : "GET"),
      headers,
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
      redirect: "manual",
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const at = pair!.indexOf("=");
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      const gone = attrs.some(
        (a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split("=")[1]!) < Date.now()),
      );
      if (gone || value === "") jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  }

  /** Follows redirects (and meta refreshes) from a request until a page that stays; at most 20 hops. */
  async follow(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<{ url: string; status: number; html: string; hops: string[] }> {
    const hops: string[] = [];
    let res = await this.request(url, init);
    let at = url;
    for (let i = 0; i < 20; i++) {
      const location = res.headers.get("location");
      if (res.status >= 300 && res.status < 400 && location) {
        at = new URL(location, at).href;
        hops.push(at);
        res = await this.request(at);
        continue;
      }
      const html = await res.text();
      const refresh = /<meta http-equiv="refresh" content="0;url=([^"]+)"/i.exec(html);
      if (refresh) {
        at = new URL(refresh[1]!.replace(/&amp;/g, "&"), at).href;
        hops.push(at);
        res = await this.request(at);
        continue;
      }
      return { url: at, status: res.status, html, hops };
    }
    throw new Error(`too many redirects from ${url}`);
  }
}

/** The action and hidden fields of the first form in a page. */
export function formIn(html: string, base: string): { action: string; fields: Record<string, string> } {
  const form = /<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) throw new Error(`no form in page: ${html.replace(/<style>[\s\S]*?<\/style>/, "").slice(0, 1500)}`);
  const fields: Record<string, string> = {};
  for (const m of form[2]!.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/gi)) fields[m[1]!] = m[2]!;
  return { action: new URL(form[1]!.replace(/&amp;/g, "&"), base).href, fields };
}

/**
 * Signs `user` in on the provider's login page (where the relying party sent the browser) and consents if the provider
 * asks; the page the relying party answers at the end.
 */
export async function signInAtProvider(
  browser: HttpBrowser,
  idp: Pick<TestOidcProvider, "issuer">,
  login: { url: string; html: string },
  user: string,
): Promise<{ url: string; status: number; html: string; hops: string[] }> {
  const loginForm = formIn(login.html, login.url);
  const consent = await browser.follow(loginForm.action, { form: { ...loginForm.fields, login: user, password: "any" } });
  if (!consent.url.startsWith(idp.issuer)) return consent; // no consent needed (already granted)
  const consentForm = formIn(consent.html, consent.url);
  return browser.follow(consentForm.action, { form: consentForm.fields });
}

/** What a console at `base()` registers with the provider: its callback, and where the provider's logout sends back. */
export function consoleRedirects(base: () => string): { redirectUris: () => string[]; postLogoutRedirectUris: () => string[] } {
  return {
    redirectUris: () => [`${base()}/_tollgate/console/oidc/callback`],
    postLogoutRedirectUris: () => [`${base()}/_tollgate/console/login`],
  };
}

/** The gateway's [operators.oidc] for this provider (openid + email; its secret from TOLLGATE_OIDC_CLIENT_SECRET). */
export function operatorsOidc(idp: Pick<TestOidcProvider, "issuer" | "clientId">, roles: Record<string, string[]>, extra: object = {}) {
  return {
    issuer: idp.issuer,
    clientId: idp.clientId,
    clientSecretEnv: "TOLLGATE_OIDC_CLIENT_SECRET",
    scopes: ["openid", "email"],
    roles,
    ...extra,
  };
}
