// The out-of-process signer over TCP with mutual TLS (`tollgate signer serve --listen`, `[wallet.remote] url`): real
// certificates made with openssl, real TLS sockets on 127.0.0.1. Only a client with a certificate from the signer's CA
// gets an answer; the gateway trusts only a signer whose certificate comes from its CA.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { paymentOptions } from "../../src/payments/requirements.js";
import { exactEvm } from "../../src/payments/schemes/exact-evm/index.js";
import { localWalletSigner } from "../../src/payments/wallet-signer.js";
import type { PaymentRequired } from "../../src/payments/wire.js";
import { openRemoteSigner } from "../../src/host/node/remote-signer.js";
import { startSignerServer } from "../../src/host/node/signer-server.js";
import { decodePaymentSignatureHeader } from "@x402/core/http";

const run = promisify(execFile);
const key = generatePrivateKey();
const TOKEN = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAYEE = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";

/** A CA, and certificates it signs (server: SAN 127.0.0.1; client: clientAuth). */
async function makeCa(dir: string, name: string) {
  const ca = { key: join(dir, `${name}-ca.key`), cert: join(dir, `${name}-ca.pem`) };
  await run(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"].concat([
      "-subj",
      `/CN=${name} CA`,
      "-keyout",
      ca.key,
      "-out",
      ca.cert,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
    ]),
  );
  const issue = async (leaf: string, ext: string) => {
    const f = {
      key: join(dir, `${leaf}.key`),
      csr: join(dir, `${leaf}.csr`),
      cert: join(dir, `${leaf}.pem`),
      ext: join(dir, `${leaf}.ext`),
    };
    await writeFile(f.ext, ext);
    await run("openssl", [
      "req",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-subj",
      `/CN=${leaf}`,
      "-keyout",
      f.key,
      "-out",
      f.csr,
    ]);
    await run("openssl", [
      "x509",
      "-req",
      "-in",
      f.csr,
      "-CA",
      ca.cert,
      "-CAkey",
      ca.key,
      "-CAcreateserial",
      "-days",
      "1",
      "-out",
      f.cert,
      "-extfile",
      f.ext,
    ]);
    return { key: f.key, cert: f.cert };
  };
  return { ca, issue };
}

const offer: PaymentRequired = {
  x402Version: 2,
  resource: { url: "https://upstream.test/x402/web/search", description: "search", mimeType: "application/json" },
  accepts: [
    {
      scheme: "exact",
      network: "eip155:84532",
      amount: "5000",
      asset: TOKEN,
      payTo: PAYEE,
      maxTimeoutSeconds: 120,
      extra: { name: "USDC", version: "2" },
    },
  ],
};

describe("the remote signer over mutual TLS", () => {
  let dir: string;
  let server: { close(): Promise<void>; port?: number };
  let url: string;
  let pki: { ca: string; client: { key: string; cert: string }; rogueClient: { key: string; cert: string }; rogueCa: string };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tollgate-signer-mtls-"));
    const good = await makeCa(dir, "tollgate");
    const rogue = await makeCa(dir, "rogue");
    const serverCert = await good.issue("signer", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    const client = await good.issue("gateway", "extendedKeyUsage=clientAuth\n");
    const rogueClient = await rogue.issue("intruder", "extendedKeyUsage=clientAuth\n");
    pki = { ca: good.ca.cert, client, rogueClient, rogueCa: rogue.ca.cert };
    server = await startSignerServer({
      tls: { host: "127.0.0.1", port: 0, cert: serverCert.cert, key: serverCert.key, ca: good.ca.cert },
      stateFile: join(dir, "state.json"),
      wallet: localWalletSigner(key),
      limits: {
        chainIds: [84532],
        assets: [TOKEN.toLowerCase()],
        payees: [],
        maxPerAuthorization: 10_000n,
        maxPerDay: 1_000_000n,
        maxLifetimeSeconds: 600,
      },
    });
    url = `https://127.0.0.1:${server.port}`;
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("answers a gateway with a certificate from its CA: its address, and signatures equal to the key's own", async () => {
    const remote = await openRemoteSigner({ url, ca: pki.ca, cert: pki.client.cert, key: pki.client.key });
    expect(remote.address).toBe(privateKeyToAccount(key).address);
    const signed = await exactEvm.sign(remote, offer, paymentOptions(offer)[0]!, 60);
    const p = decodePaymentSignatureHeader(signed.header[1]).payload as { signature: string };
    expect(p.signature).toMatch(/^0x[0-9a-f]{130}$/);
  });

  it("refuses, in the handshake, a client with no certificate or one from another CA", async () => {
    await expect(openRemoteSigner({ url, ca: pki.ca, cert: pki.rogueClient.cert, key: pki.rogueClient.key })).rejects.toThrow(
      /^wallet\.remote\.url: no signer answers at https:\/\/127\.0\.0\.1:\d+ /,
    );
    const bare = await new Promise<string>((resolve) => {
      const req = request(`${url}/address`, { rejectUnauthorized: false }, (res) => resolve(`answered ${res.statusCode}`));
      req.on("error", (err) => resolve(`refused: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
      req.end();
    });
    expect(bare).toMatch(/^refused/);
  });

  it("is not trusted by a gateway whose CA did not sign the signer's certificate", async () => {
    await expect(openRemoteSigner({ url, ca: pki.rogueCa, cert: pki.client.cert, key: pki.client.key })).rejects.toThrow(
      /no signer answers/,
    );
  });

  it("config: url needs ca, cert and key; socket or url, not both; https only", () => {
    const base = { upstream: { baseUrl: "https://upstream.test" }, tenants: [] };
    const bad = (remote: Record<string, unknown>) => () => parseConfig({ ...base, wallet: { signer: "remote", remote } });
    expect(bad({ url })).toThrow(/wallet\.remote.*ca, cert and key/s);
    expect(bad({ url, ca: pki.ca, cert: pki.client.cert, key: pki.client.key, socket: "/run/s.sock" })).toThrow(/socket .* or url/);
    expect(bad({ url: "http://127.0.0.1:1", ca: pki.ca, cert: pki.client.cert, key: pki.client.key })).toThrow(/wallet\.remote\.url/);
    expect(() =>
      parseConfig({ ...base, wallet: { signer: "remote", remote: { url, ca: pki.ca, cert: pki.client.cert, key: pki.client.key } } }),
    ).not.toThrow();
  });
});
