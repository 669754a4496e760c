// The real system the model-based suite drives: the emulator (x402 on a local anvil chain, credit-billed search) and
// two Node gateways on one shared state (memory in one process, or one real redis-server), with the operations that
// operators and clients perform, each over HTTP as a real client would send it.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import WebSocket from "ws";
import { parseConfig, type Secrets } from "../../config/load.js";
import type { EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { memoryStores } from "../../src/state/memory.js";
import type { StateStores } from "../../src/state/types.js";
import { consentForm, listToolsAs, pkcePair, postForm, refreshWith, registerClient } from "../helpers/mcp-oauth.js";
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

export type Backend = "memory" | "redis";

/** What one tenant of the run is: its id, scopes, budget (USD per day) and what happens when it runs out. */
export interface TenantPlan {
  id: string;
  scopes: string[];
  daily?: string;
  onExhausted?: "block" | "stop";
}

/** The run's tenants: an operator, a tenant that is blocked at its budget, one whose budget pulls the kill switch. */
export const TENANTS: TenantPlan[] = [
  { id: "ops", scopes: ["admin", "search"] },
  { id: "acme", scopes: ["search", "sessions", "sandboxes", "jobs"], daily: "0.040" },
  { id: "stopper", scopes: ["search", "sessions", "sandboxes"], daily: "0.015", onExhausted: "stop" },
];

/** What one paid call costs: the emulator's x402 search price and the gateway's default webSearch credit price. */
export const PRICE = { x402: 5000n, credits: 5000n } as const;

export const ORIGIN = "https://gateway.model.test";

export interface RealSystem {
  backend: Backend;
  emulator: EmulatorHandle;
  gateways: [RunningGateway, RunningGateway];
  /** Every log line either instance (or an earlier one restarted away) wrote. */
  logs: string[];
  secrets: Secrets;
  wallet: { address: `0x${string}`; privateKey: `0x${string}` };
  walletFunds: bigint;
  /** The config keys (plain) of the tenants, by tenant id. */
  configKeys: Record<string, string>;
  /** The identity provider people sign in with, when the run has one. */
  people?: People;
  /** Restarts instance `i`: closes it, and starts a new gateway on the same state and secrets. */
  restart(i: 0 | 1): Promise<void>;
  stores(): StateStores;
  close(): Promise<void>;
}

export async function startSystem(
  backend: Backend,
  emulator: EmulatorHandle,
  redisUrl: string | undefined,
  walletFunds = 1_000_000n,
  /** The operators' identity provider people sign in with (the console, the admin API's bearer, the consent page). */
  people?: People,
): Promise<RealSystem> {
  const chain = emulator.chain!;
  const wallet = await chain.createFundedWallet(walletFunds);
  const configKeys: Record<string, string> = {};
  const tenants = [];
  for (const t of TENANTS) {
    configKeys[t.id] = generateTenantKey();
    tenants.push({
      id: t.id,
      scopes: t.scopes,
      keys: [{ hash: await hashTenantKey(configKeys[t.id]!) }],
      ...(t.daily ? { budget: { daily: t.daily } } : {}),
      ...(t.onExhausted ? { onExhausted: t.onExhausted } : {}),
    });
  }
  if (backend === "redis") {
    const r = new Redis(redisUrl!, { lazyConnect: true, maxRetriesPerRequest: 2 });
    await r.connect();
    await r.flushdb();
    r.disconnect();
  }
  const config = parseConfig({
    // One public origin for the fleet (a load balancer's): the OAuth issuer and the tokens' audience.
    server: { host: "127.0.0.1", port: 0, logLevel: "info", publicOrigin: ORIGIN },
    // The sandbox emulator names its runtime localhost:<port>; both names are its (for the runtime relay).
    upstream: {
      baseUrl: emulator.controlUrl,
      timeoutMs: 30_000,
      allowedHosts: [`127.0.0.1:${new URL(emulator.runtimeUrl).port}`, `localhost:${new URL(emulator.runtimeUrl).port}`],
    },
    payments: {
      networks: [chain.network],
      assets: [chain.token.address],
      maxPerRequest: "0.50",
      rpc: { [chain.network]: chain.rpcUrl },
    },
    cache: { enabled: false },
    state: backend === "redis" ? { backend: "redis", redisUrl } : { backend: "memory" },
    ...(people ? { operators: { oidc: operatorsOidc(people.idp, PEOPLE_ROLES, { tenantClaim: "tenant" }) } } : {}),
    tenants,
  });
  const secrets: Secrets = {
    upstreamApiKey: emulator.apiKey,
    walletKey: wallet.privateKey,
    tokenSecret: randomBytes(32).toString("hex"),
    ...(people ? { oidcClientSecret: people.idp.clientSecret } : {}),
  };
  const logs: string[] = [];
  const shared = backend === "memory" ? memoryStores() : undefined;
  const start = () => startNodeGateway({ config, secrets, logSink: (l) => logs.push(l), ...(shared ? { deps: { stores: shared } } : {}) });
  const gateways = (await Promise.all([start(), start()])) as [RunningGateway, RunningGateway];
  return {
    backend,
    emulator,
    gateways,
    logs,
    secrets,
    wallet,
    walletFunds,
    configKeys,
    ...(people ? { people } : {}),
    async restart(i) {
      await gateways[i].close();
      gateways[i] = await start();
    },
    stores: () => gateways[0].gateway.services.stores,
    async close() {
      await Promise.all(gateways.map((g) => g.close().catch(() => {})));
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// What clients and operators send. Every call goes over a real socket to one instance's URL.

export interface Answer {
  status: number;
  json: any;
  headers: Headers;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = { text: text.slice(0, 300) };
  }
  return { status: res.status, json, headers: res.headers };
}

export async function adminCall(url: string, opsKey: string, method: string, path: string, body?: unknown): Promise<Answer> {
  return answer(
    await fetch(`${url}/_tollgate/admin${path}`, {
      method,
      headers: { "x-api-key": opsKey, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

export type Cred = { key: string } | { bearer: string } | { cookie: string };

export function credHeaders(c: Cred): Record<string, string> {
  if ("key" in c) return { "x-api-key": c.key };
  if ("bearer" in c) return { authorization: `Bearer ${c.bearer}` };
  return { cookie: c.cookie };
}

export async function whoami(url: string, c: Cred): Promise<number> {
  const r = await fetch(`${url}/_tollgate/whoami`, { headers: credHeaders(c) });
  await r.body?.cancel();
  return r.status;
}

/** A free HTTP row a tenant key and an MCP token both may call. */
export async function usage(url: string, c: Cred): Promise<number> {
  const r = await fetch(`${url}/_tollgate/usage`, { headers: credHeaders(c) });
  await r.body?.cancel();
  return r.status;
}

export async function mcpList(url: string, c: Cred): Promise<number> {
  const r =
    "bearer" in c
      ? await listToolsAs(fetch, url, c.bearer)
      : await fetch(`${url}/mcp`, {
          method: "POST",
          headers: { ...credHeaders(c), "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        });
  await r.body?.cancel();
  return r.status;
}

/** The console's overview with a session cookie: 200 while signed in, a redirect to the login page otherwise. */
export async function consoleOverview(url: string, cookie: string): Promise<number> {
  const r = await fetch(`${url}/_tollgate/console`, { headers: { cookie }, redirect: "manual" });
  await r.body?.cancel();
  return r.status;
}

/** Signs in to the console with a key: the session cookie, or the refusal's status. */
export async function consoleSignIn(url: string, key: string): Promise<{ status: number; cookie?: string }> {
  const r = await fetch(`${url}/_tollgate/console/login`, {
    method: "POST",
    redirect: "manual",
    headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ key }),
  });
  await r.body?.cancel();
  const set = r.headers.get("set-cookie");
  return { status: r.status, cookie: r.status === 303 && set ? set.split(";")[0] : undefined };
}

export async function paidSearch(url: string, c: Cred, kind: "x402" | "credits", query: string): Promise<Answer> {
  return answer(
    await fetch(`${url}${kind === "x402" ? "/x402/web/search" : "/api/web/search"}`, {
      method: "POST",
      headers: { ...credHeaders(c), "content-type": "application/json" },
      body: JSON.stringify({ query }),
    }),
  );
}

export async function mintToken(url: string, key: string, body: Record<string, unknown>): Promise<Answer> {
  return answer(
    await fetch(`${url}/_tollgate/tokens`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
}

export const REDIRECT = "http://127.0.0.1:9/cb";

/** Registration, the consent a browser posts with a tenant key, and the code exchange: the grant's first pair. */
export async function consent(
  consentAt: string,
  exchangeAt: string,
  key: string,
  scopes: string[],
  cap: string,
  tools?: string[],
): Promise<{ status: number; clientId?: string; access?: string; refresh?: string; error?: unknown }> {
  const client = await (await registerClient(fetch, consentAt, "Model Agent", REDIRECT)).json();
  const { verifier, challenge } = await pkcePair();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope: scopes.join(" "),
  });
  const page = await (await fetch(`${consentAt}/authorize?${q}`)).text();
  const back = await postForm(
    fetch,
    `${consentAt}/authorize`,
    consentForm(page, { credential: key, days: "1", cap, scopes, ...(tools ? { tools } : {}) }),
  );
  const location = back.headers.get("location");
  const code = location ? new URL(location).searchParams.get("code") : null;
  if (!code) return { status: back.status, error: location ?? (await back.text()).slice(0, 20_000) };
  const tokens = await answer(
    await postForm(fetch, `${exchangeAt}/token`, {
      grant_type: "authorization_code",
      code,
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }),
  );
  if (tokens.status !== 200) return { status: tokens.status, error: tokens.json };
  return { status: 200, clientId: client.client_id, access: tokens.json.access_token, refresh: tokens.json.refresh_token };
}

export async function refresh(url: string, refreshToken: string, clientId: string): Promise<Answer> {
  return answer(await refreshWith(fetch, url, refreshToken, clientId));
}

// ---------------------------------------------------------------------------------------------------------------
// Sandboxes and sessions: created and stopped with a tenant key, and the credentials their answers carry (a sandbox's
// runtime token; a session's CDP `wsEndpoint` and live view link) used as their clients use them.

/** How long the model's sandboxes and sessions run at most: their credit hold is this × the minute price. */
export const RESOURCE_MINUTES = 3;

export interface CreatedResource {
  status: number;
  json: any;
  id?: string;
  /** A sandbox's runtime token (the gateway's own, bound to the sandbox). */
  runtime?: string;
  /** A session's wsEndpoint and liveUrl, as path and query (the instance's origin is the probe's). */
  cdp?: string;
  live?: string;
}

const pathOf = (u: string) => {
  const x = new URL(u);
  return `${x.pathname}${x.search}`;
};

export async function createResource(url: string, key: string, kind: "sandbox" | "session"): Promise<CreatedResource> {
  const body = kind === "sandbox" ? { imageName: "node", timeoutMinutes: RESOURCE_MINUTES } : { timeoutMinutes: RESOURCE_MINUTES };
  const a = await answer(
    await fetch(`${url}/api/${kind}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
  if (a.status !== 200) return { status: a.status, json: a.json };
  if (kind === "sandbox") return { status: 200, json: a.json, id: a.json.id, runtime: a.json.token };
  return { status: 200, json: a.json, id: a.json.id, cdp: pathOf(a.json.wsEndpoint), live: pathOf(a.json.liveUrl) };
}

export async function stopResource(url: string, key: string, kind: "sandbox" | "session", id: string): Promise<Answer> {
  return answer(await fetch(`${url}/api/${kind}/${id}/stop`, { method: "PUT", headers: { "x-api-key": key } }));
}

/** A runtime call with a sandbox's runtime token, through the gateway's runtime relay: its status. */
export async function runtimeCall(url: string, id: string, token: string): Promise<number> {
  const r = await fetch(`${url}/sandbox/${id}/processes`, { headers: { authorization: `Bearer ${token}` } });
  await r.body?.cancel();
  return r.status;
}

/**
 * A bounded CDP round trip on a session's wsEndpoint (the gateway's WebSocket relay, a real `ws` client): 200 when
 * `Browser.getVersion` is answered, the refusal's status when the upgrade is refused, 0 on any other end (5 s at most).
 */
export function cdpCall(url: string, pathAndQuery: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}${pathAndQuery}`);
    let done = false;
    const end = (status: number) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      ws.terminate();
      resolve(status);
    };
    const timer = setTimeout(() => end(0), 5_000);
    ws.once("open", () => ws.send(JSON.stringify({ id: 1, method: "Browser.getVersion" })));
    ws.on("message", (m) => {
      try {
        const reply = JSON.parse(String(m));
        if (reply.id === 1) end(reply.result?.protocolVersion ? 200 : 0);
      } catch {
        end(0);
      }
    });
    ws.once("unexpected-response", (_req, res) => end(res.statusCode ?? 0));
    ws.once("error", () => end(0));
    ws.once("close", () => end(0));
  });
}

/** The live view page of a session's liveUrl: 200 while its ticket opens it. */
export async function liveCall(url: string, pathAndQuery: string): Promise<number> {
  const r = await fetch(`${url}${pathAndQuery}`);
  await r.body?.cancel();
  return r.status;
}

/** Stops what a run left running on the emulator (its own API key; the gateway may refuse a disabled tenant). */
export async function stopUpstream(emulator: EmulatorHandle, kind: "sandbox" | "session", id: string): Promise<void> {
  const r = await fetch(`${emulator.controlUrl}/api/${kind}/${id}/stop`, { method: "PUT", headers: { "x-api-key": emulator.apiKey } });
  await r.body?.cancel();
}

// ---------------------------------------------------------------------------------------------------------------
// People: the operators' identity provider (a real oidc-provider on 127.0.0.1:0, test/helpers/oidc-provider.ts) with a
// few accounts whose groups the model changes between steps; they sign in to the console, call the admin API with the
// provider's JWT, and sign in on the consent page to connect an agent.

/** The gateway's [operators.oidc.roles]: a group per role; a tenant user's tenant comes from its `tenant` claim. */
export const PEOPLE_ROLES = {
  admin: ["groups:platform-admins"],
  "operator-readonly": ["groups:sre"],
  tenant: ["groups:customers"],
};

/** What a person's account at the provider says: its groups (and tenant claim), by the role they should map to. */
export const PROFILES = {
  admin: { groups: ["platform-admins", "staff"] },
  readonly: { groups: ["sre"] },
  "tenant-acme": { groups: ["customers"], tenant: "acme" },
  // A tenant user whose tenant claim names the operators' tenant: a tenant user of ops, never an operator.
  "tenant-ops": { groups: ["customers"], tenant: "ops" },
  none: { groups: ["marketing"] },
} as const;
export type Profile = keyof typeof PROFILES;

export const PEOPLE = ["pat", "sam"] as const;

export interface People {
  idp: TestOidcProvider;
  /** The provider's accounts, read at every sign-in and every JWT minted: the model changes their groups. */
  users: Record<string, TestUser>;
  setProfile(person: string, profile: Profile): void;
  close(): Promise<void>;
}

export async function startPeople(): Promise<People> {
  const users: Record<string, TestUser> = {};
  const setProfile = (person: string, profile: Profile) => {
    const p = PROFILES[profile];
    users[person] = {
      email: `${person}@people.example`,
      email_verified: true,
      groups: [...p.groups],
      ...("tenant" in p ? { tenant: p.tenant } : {}),
    };
  };
  for (const p of PEOPLE) setProfile(p, "none");
  // The gateways' callbacks are on the fleet's public origin; the browser below maps it to the instance it talks to.
  const idp = await startOidcProvider({ users, ...consoleRedirects(() => ORIGIN) });
  return { idp, users, setProfile, close: () => idp.close() };
}

/** A browser at one instance: the fleet's public origin (in the gateway's redirects and links) is that instance. */
class InstanceBrowser extends HttpBrowser {
  constructor(private readonly instance: string) {
    super();
  }
  override request(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    return super.request(url.startsWith(ORIGIN) ? `${this.instance}${url.slice(ORIGIN.length)}` : url, init);
  }
}

/** A person signs in to the console at `url` through the provider: the page it ends on, and the session cookie if any. */
export async function personConsoleSignIn(
  url: string,
  people: People,
  person: string,
): Promise<{ status: number; cookie?: string; html: string }> {
  const browser = new InstanceBrowser(url);
  const login = await browser.follow(`${url}/_tollgate/console/oidc/login`);
  if (!login.url.startsWith(people.idp.issuer)) return { status: login.status, html: login.html };
  const page = await signInAtProvider(browser, people.idp, login, person);
  const jar = browser.cookies(new URL(url).origin);
  const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  return { status: page.status, html: page.html, ...(cookie ? { cookie } : {}) };
}

/**
 * A person connects an agent: an MCP client registers, the consent page at `url` is opened and "Sign in with <provider>"
 * followed; the page it comes back to (200, signed in for a tenant, named) or the refusal (403).
 */
export async function personConsent(url: string, people: People, person: string): Promise<{ status: number; tenant?: string }> {
  const client = await (await registerClient(fetch, url, "Model Agent", REDIRECT)).json();
  const { challenge } = await pkcePair();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope: "search",
  });
  const browser = new InstanceBrowser(url);
  const page = await browser.follow(`${url}/authorize?${q}`);
  const start = /<a class="button" href="([^"]+)"/.exec(page.html)?.[1]?.replace(/&amp;/g, "&");
  if (!start) throw new Error(`no sign-in link on the consent page: ${page.status} ${page.html.slice(0, 300)}`);
  const login = await browser.follow(new URL(start, url).href);
  const back = await signInAtProvider(browser, people.idp, login, person);
  const tenant = /for tenant <strong>([^<]+)<\/strong>/.exec(back.html)?.[1];
  return { status: back.status, ...(tenant ? { tenant } : {}) };
}

/**
 * A person connects an agent for good: the consent page at `consentAt`, "Sign in with <provider>", the form allowed
 * (search, `cap` over the grant's life, a day), the code exchanged at `exchangeAt`. The grant's client and tokens, or
 * what refused it.
 */
export async function personGrant(
  consentAt: string,
  exchangeAt: string,
  people: People,
  person: string,
  cap: string,
): Promise<{ status: number; tenant?: string; clientId?: string; access?: string; refresh?: string; error?: unknown }> {
  const client = await (await registerClient(fetch, consentAt, "Model Person Agent", REDIRECT)).json();
  const { verifier, challenge } = await pkcePair();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope: "search",
  });
  const browser = new InstanceBrowser(consentAt);
  const page = await browser.follow(`${consentAt}/authorize?${q}`);
  const start = /<a class="button" href="([^"]+)"/.exec(page.html)?.[1]?.replace(/&amp;/g, "&");
  if (!start) throw new Error(`no sign-in link on the consent page: ${page.status} ${page.html.slice(0, 300)}`);
  const login = await browser.follow(new URL(start, consentAt).href);
  const back = await signInAtProvider(browser, people.idp, login, person);
  const tenant = /for tenant <strong>([^<]+)<\/strong>/.exec(back.html)?.[1];
  if (back.status !== 200 || !tenant) return { status: back.status, error: back.html.slice(0, 2_000) };
  const { tools_shown: _all, ...fields } = formIn(back.html, back.url).fields;
  const res = await browser.request(`${consentAt}/authorize`, {
    form: { ...fields, scope: "search", cap, window: "total", days: "1", action: "allow" },
  });
  const location = res.headers.get("location");
  const code = location ? new URL(location).searchParams.get("code") : null;
  if (!code) return { status: res.status, tenant, error: location ?? (await res.text()).slice(0, 2_000) };
  const tokens = await answer(
    await postForm(fetch, `${exchangeAt}/token`, {
      grant_type: "authorization_code",
      code,
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }),
  );
  if (tokens.status !== 200) return { status: tokens.status, tenant, error: tokens.json };
  return { status: 200, tenant, clientId: client.client_id, access: tokens.json.access_token, refresh: tokens.json.refresh_token };
}

/** A console page with a session cookie, not followed: 200, or a redirect to sign in, or a refusal. */
export async function consolePage(url: string, cookie: string, path: string): Promise<number> {
  const r = await fetch(`${url}/_tollgate/console${path}`, { headers: { cookie }, redirect: "manual" });
  await r.body?.cancel();
  return r.status;
}

/** The admin API with the provider's JWT for `person` (minted now, from its current groups): the status of a read. */
export async function personAdminRead(url: string, people: People, person: string): Promise<{ status: number; jwt: string }> {
  const jwt = await people.idp.mintIdToken(person);
  const r = await fetch(`${url}/_tollgate/admin/tenants`, { headers: { authorization: `Bearer ${jwt}` } });
  await r.body?.cancel();
  return { status: r.status, jwt };
}
