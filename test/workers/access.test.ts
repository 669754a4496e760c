// Cloudflare Access in front of the Worker: its signed `Cf-Access-Jwt-Assertion` verified inside workerd against the
// team domain's certs (a stand-in on 127.0.0.1, started by global-setup) and mapped to a role; a wrong AUD, a forged
// signature or an unmapped identity gets nothing.
import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { generateKeyPair, importJWK, SignJWT } from "jose";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

const stack = inject("stack");
const AUD = "f00dfeedcafe";

describe("Cloudflare Access sign-in (workerd)", () => {
  it("admits a mapped identity on the admin API and the console, and refuses the rest", async () => {
    const config = parseConfig({
      server: { logLevel: "silent" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      operators: {
        access: {
          teamDomain: stack.accessTeamDomain,
          aud: AUD,
          roles: { admin: ["email:alice@example.com"], "operator-readonly": ["groups:sre"] },
        },
      },
      tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(generateTenantKey()) }] }],
    });
    const gw = createGateway(config, { secrets: { tokenSecret: "w".repeat(40) } });
    const key = await importJWK(stack.accessPrivateJwk, "RS256");
    const sign = (claims: Record<string, unknown>, aud = AUD, signer: CryptoKey | Uint8Array = key as CryptoKey) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: "access-1" })
        .setIssuer(stack.accessTeamDomain)
        .setAudience(aud)
        .setSubject(String(claims.sub))
        .setExpirationTime("5m")
        .sign(signer);
    const call = (path: string, assertion: string, method = "GET") =>
      gw.app.request(`/_tollgate${path}`, {
        method,
        headers: { "cf-access-jwt-assertion": assertion, "content-type": "application/json" },
        body: method === "POST" ? JSON.stringify({ id: "edge" }) : undefined,
      });

    const alice = await sign({ sub: "a-1", email: "alice@example.com" });
    expect((await call("/admin/tenants", alice)).status).toBe(200);
    expect((await call("/admin/tenants", alice, "POST")).status).toBe(201);
    const audit = (await (await call("/admin/audit", alice)).json()) as { entries: Array<{ action: string; actor: string }> };
    expect(audit.entries.find((e) => e.action === "tenant.create")?.actor).toBe("access:a-1");
    const page = await call("/console", alice);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("alice@example.com (admin)");

    const sre = await sign({ sub: "s-1", groups: ["sre"] });
    expect((await call("/admin/tenants", sre)).status).toBe(200);
    expect((await call("/admin/tenants", sre, "POST")).status).toBe(403);
    expect((await call("/admin/tenants", await sign({ sub: "n-1", groups: ["marketing"] }))).status).toBe(403);
    expect((await call("/admin/tenants", await sign({ sub: "a-1", email: "alice@example.com" }, "other-aud"))).status).toBe(401);
    const { privateKey } = await generateKeyPair("RS256");
    const forged = await call("/admin/tenants", await sign({ sub: "a-1", email: "alice@example.com" }, AUD, privateKey));
    expect([forged.status, ((await forged.json()) as { code: string }).code]).toEqual([401, "invalid_access_token"]);
  });
});
