// OAuth across a fleet: two Node gateways sharing Redis. A grant consented to on one instance works on the other;
// its refresh token rotates on either, parallel refreshes on both get one pair (the grace window is fleet-wide); the
// rotated-out one used on the other instance after the window revokes the grant; a grant
// revoked on one instance is refused on the other at once (within the fleet's revocation poll, 250 ms). Both answer as
// one public origin (the issuer and the tokens' audience), as behind a load balancer.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";
import { consentForm, listToolsAs, pkcePair, postForm, refreshWith, registerClient } from "../helpers/mcp-oauth.js";

const REDIRECT = "http://127.0.0.1:9/cb";
const key = generateTenantKey();
const secret = randomBytes(32).toString("hex");
let redis: RedisServer;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  const config = parseConfig({
    // One public origin for the fleet (a load balancer's): the tokens' audience, the issuer.
    server: { host: "127.0.0.1", port: 0, logLevel: "error", publicOrigin: "https://gateway.example" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    state: { backend: "redis", redisUrl: redis.url },
    // A short grace window: parallel refreshes within it share one pair; the reuse below comes after it.
    oauth: { refreshGraceSeconds: 1 },
    tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }] }],
  });
  for (let i = 0; i < 2; i++) gateways.push(await startNodeGateway({ config, secrets: { upstreamApiKey: "k", tokenSecret: secret } }));
  // Another gateway (another resource) that happens to share the secret and the state: its /mcp is not the tokens' audience.
  const other = parseConfig({ ...JSON.parse(JSON.stringify(config)), server: { ...config.server, publicOrigin: "https://other.example" } });
  gateways.push(await startNodeGateway({ config: other, secrets: { upstreamApiKey: "k", tokenSecret: secret } }));
}, 60_000);

afterAll(async () => {
  for (const g of gateways) await g.close().catch(() => {});
  await redis?.stop();
});

const form = (url: string, body: Record<string, string>) => postForm(fetch, url, body);

/** Registration, consent and the code exchange, each on the instance given. */
async function grantOn(reg: string, consentAt: string, exchangeAt: string) {
  const client = await (await registerClient(fetch, reg, "Fleet Agent", REDIRECT)).json();
  const { verifier, challenge } = await pkcePair();
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope: "search",
  });
  const page = await (await fetch(`${consentAt}/authorize?${q}`)).text();
  const back = await postForm(fetch, `${consentAt}/authorize`, consentForm(page, { credential: key, days: "1" }));
  const code = new URL(back.headers.get("location")!).searchParams.get("code")!;
  const tokens = await (
    await form(`${exchangeAt}/token`, {
      grant_type: "authorization_code",
      code,
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    })
  ).json();
  expect(tokens.access_token).toBeDefined();
  return { clientId: client.client_id as string, tokens };
}

const listTools = (url: string, token: string) => listToolsAs(fetch, url, token);

describe("OAuth on a fleet sharing Redis", () => {
  it("a grant made across instances works on each; a refresh token rotated on one and reused on the other revokes it everywhere", async () => {
    const [a, b] = gateways.map((g) => g.url) as [string, string];
    const { clientId, tokens } = await grantOn(a, b, a);
    expect((await listTools(b, tokens.access_token)).status).toBe(200);
    const elsewhere = await listTools(gateways[2]!.url, tokens.access_token);
    expect(elsewhere.status).toBe(401);
    expect(await elsewhere.json()).toMatchObject({ code: "token_audience" });
    expect(elsewhere.headers.get("www-authenticate")).toContain('error="invalid_token"');
    // A host's parallel refreshes, landing on both instances at once: one rotation, the same pair for all of them.
    const answers = await Promise.all(
      [b, a, b, a].map(async (url) => (await refreshWith(fetch, url, tokens.refresh_token, clientId)).json()),
    );
    const next = answers[0];
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect(new Set(answers.map((x) => x.refresh_token))).toEqual(new Set([next.refresh_token]));
    expect(new Set(answers.map((x) => x.access_token)).size).toBe(1);
    expect((await listTools(a, next.access_token)).status).toBe(200);
    // After the grace window, the rotated-out token is a stolen one.
    await new Promise((r) => setTimeout(r, 1_100));
    const reuse = await refreshWith(fetch, a, tokens.refresh_token, clientId);
    expect(await reuse.json()).toMatchObject({ error: "invalid_grant" });
    await new Promise((r) => setTimeout(r, 300));
    for (const url of [a, b]) {
      const r = await listTools(url, next.access_token);
      expect(r.status).toBe(401);
      expect(await r.json()).toMatchObject({ code: "token_revoked" });
    }
  });

  it("a grant revoked on one instance is refused on the other within the revocation poll", async () => {
    const [a, b] = gateways.map((g) => g.url) as [string, string];
    const { tokens } = await grantOn(b, a, b);
    expect((await listTools(b, tokens.access_token)).status).toBe(200);
    const grants = await (await fetch(`${a}/_tollgate/grants`, { headers: { "x-api-key": key } })).json();
    const id = grants.grants.find((g: any) => g.state === "active").id;
    const revoked = Date.now();
    expect((await fetch(`${a}/_tollgate/grants/${id}`, { method: "DELETE", headers: { "x-api-key": key } })).status).toBe(200);
    let status = 200;
    while (status === 200 && Date.now() - revoked < 2_000) {
      status = (await listTools(b, tokens.access_token)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toBe(401);
    expect(Date.now() - revoked).toBeLessThan(1_000);
  });
});
