// A stand-in for a Cloudflare Access team domain: `/cdn-cgi/access/certs` served from 127.0.0.1:0 with a key pair
// generated here; the private half (a JWK) signs `Cf-Access-Jwt-Assertion` tokens in the tests.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";

export async function startAccessCerts(): Promise<{ teamDomain: string; privateJwk: Record<string, unknown>; close(): Promise<void> }> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: "access-1", alg: "RS256", use: "sig" }] };
  const server = createServer((req, res) => {
    const ok = req.url === "/cdn-cgi/access/certs";
    res.writeHead(ok ? 200 : 404, { "content-type": "application/json" });
    res.end(ok ? JSON.stringify(jwks) : "{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    teamDomain: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    privateJwk: { ...(await exportJWK(privateKey)), kid: "access-1", alg: "RS256" },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
