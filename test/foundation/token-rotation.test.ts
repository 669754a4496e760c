// Token secret rotation: several secrets with ids, tokens carry `kid`, retired secrets verify until they are removed.
import { afterAll, describe, expect, it } from "vitest";
import { decodeProtectedHeader } from "jose";
import { ConfigError, secretsFromEnv } from "../../config/load.js";
import { memoryStores } from "../../src/state/memory.js";
import { TokenService } from "../../src/identity/tokens.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";
import { startTestGateway } from "../helpers/gateway.js";

const OLD = "o".repeat(40);
const NEW = "n".repeat(40);
const kv = memoryStores().kv;
const mint = (svc: TokenService) => svc.mint({ tenant: "acme", kind: "search", scopes: ["search"], ttlSeconds: 600 });

describe("TokenService with several secrets", () => {
  it("signs with the first secret and names it in the kid header", async () => {
    const { token } = await mint(
      new TokenService(
        [
          { kid: "2026-11", secret: NEW },
          { kid: "2026-10", secret: OLD },
        ],
        kv,
      ),
    );
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: "HS256", kid: "2026-11" });
  });

  it("keeps verifying tokens of a retired secret while it is listed, and refuses them once it is removed", async () => {
    const { token } = await mint(new TokenService([{ kid: "2026-10", secret: OLD }], kv));
    const rotated = new TokenService(
      [
        { kid: "2026-11", secret: NEW },
        { kid: "2026-10", secret: OLD },
      ],
      kv,
    );
    expect((await rotated.verify(token)).tenant).toBe("acme");
    expect(await rotated.inspect(token)).toMatchObject({ tenant: "acme" });
    const removed = new TokenService([{ kid: "2026-11", secret: NEW }], kv);
    await expect(removed.verify(token)).rejects.toMatchObject({ status: 401, code: "token_invalid" });
    expect(await removed.inspect(token)).toBeUndefined();
  });

  it("does not let a kid pick another secret: a token re-labelled with a listed kid fails its signature", async () => {
    const { token } = await mint(new TokenService([{ kid: "a", secret: OLD }], kv));
    const [, payload, sig] = token.split(".");
    const relabelled = `${Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT", kid: "b" })).toString("base64url")}.${payload}.${sig}`;
    await expect(
      new TokenService(
        [
          { kid: "b", secret: NEW },
          { kid: "a", secret: OLD },
        ],
        kv,
      ).verify(relabelled),
    ).rejects.toMatchObject({ code: "token_invalid" });
  });

  it('a lone TOLLGATE_TOKEN_SECRET signs as kid "default", and tokens without a kid are checked with the default secret', async () => {
    const single = new TokenService(OLD, kv);
    const { token } = await mint(single);
    expect(decodeProtectedHeader(token).kid).toBe("default");
    const rotated = new TokenService(
      [
        { kid: "next", secret: NEW },
        { kid: "default", secret: OLD },
      ],
      kv,
    );
    expect((await rotated.verify(token)).tenant).toBe("acme");
    // A token minted before kids existed (no kid header) still verifies under the default secret.
    const { SignJWT } = await import("jose");
    const legacy = await new SignJWT({ k: "search", s: ["search"] })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuer("tollgate")
      .setSubject("acme")
      .setJti("legacy-1")
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(new TextEncoder().encode(OLD));
    expect((await rotated.verify(legacy)).jti).toBe("legacy-1");
    await expect(new TokenService([{ kid: "next", secret: NEW }], kv).verify(legacy)).rejects.toMatchObject({ code: "token_invalid" });
  });
});

describe("TOLLGATE_TOKEN_SECRETS", () => {
  it("reads kid:secret pairs in order, the first being the signer", () => {
    expect(secretsFromEnv({ TOLLGATE_TOKEN_SECRETS: `new:${NEW}, old:${OLD}` }).tokenSecrets).toEqual([
      { kid: "new", secret: NEW },
      { kid: "old", secret: OLD },
    ]);
    expect(secretsFromEnv({ TOLLGATE_TOKEN_SECRET: OLD })).toMatchObject({ tokenSecret: OLD });
  });

  it("names each problem by its entry and never prints a secret", () => {
    let err: unknown;
    try {
      secretsFromEnv({ TOLLGATE_TOKEN_SECRETS: `ok:${NEW},short:abc,${OLD},ok:${OLD}` });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toContain('TOLLGATE_TOKEN_SECRETS[1] (kid "short"): expected a secret of at least 32 characters');
    expect(msg).toContain('TOLLGATE_TOKEN_SECRETS[2]: expected "kid:secret"');
    expect(msg).toContain('TOLLGATE_TOKEN_SECRETS[3]: duplicate kid "ok"');
    expect(msg).not.toContain(NEW);
    expect(msg).not.toContain(OLD);
  });

  it("refuses both variables at once", () => {
    expect(() => secretsFromEnv({ TOLLGATE_TOKEN_SECRET: OLD, TOLLGATE_TOKEN_SECRETS: `new:${NEW}` })).toThrow(
      /set either it or TOLLGATE_TOKEN_SECRET/,
    );
  });
});

describe("rotating a running gateway's secret", () => {
  const stops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const s of stops.reverse()) await s();
  });

  it("a token minted before the rotation is still honoured after it, and not once its secret is removed", async () => {
    const upstream = await startEchoUpstream();
    stops.push(() => upstream.close());
    const key = generateTenantKey();
    const raw = {
      upstream: { baseUrl: upstream.url },
      tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }] }],
    };
    const start = async (env: Record<string, string>) => {
      const gw = await startTestGateway(raw, secretsFromEnv(env));
      stops.push(() => gw.close());
      return gw;
    };
    const post = (url: string, path: string, body: unknown) =>
      fetch(url + path, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: JSON.stringify(body) });

    const before = await start({ TOLLGATE_TOKEN_SECRET: OLD });
    const minted = await post(before.url, "/_tollgate/tokens", { kind: "search", cap: "0.10" });
    expect(minted.status).toBe(201);
    const { token } = await minted.json();

    const rotated = await start({ TOLLGATE_TOKEN_SECRETS: `next:${NEW},default:${OLD}` });
    const res = await post(rotated.url, "/_tollgate/tokens/revoke", { token });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ revoked: true });
    const fresh = await (await post(rotated.url, "/_tollgate/tokens", { kind: "search", cap: "0.10" })).json();
    expect(decodeProtectedHeader(fresh.token).kid).toBe("next");

    const retired = await start({ TOLLGATE_TOKEN_SECRETS: `next:${NEW}` });
    expect((await post(retired.url, "/_tollgate/tokens/revoke", { token })).status).toBe(404);
    expect((await post(retired.url, "/_tollgate/tokens/revoke", { token: fresh.token })).status).toBe(200);
  });
});
