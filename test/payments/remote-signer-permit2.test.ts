// The out-of-process signer signs the Permit2 schemes' typed data as the gateway asks for it (nested integers cross
// the socket as decimal strings and come back as the very same EIP-712 message), under its own limits.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { paymentOptions } from "../../src/payments/requirements.js";
import { exactEvm } from "../../src/payments/schemes/exact-evm/index.js";
import { uptoEvm } from "../../src/payments/schemes/upto-evm/index.js";
import { localWalletSigner, type TypedData, type WalletSigner } from "../../src/payments/wallet-signer.js";
import type { PaymentRequired } from "../../src/payments/wire.js";
import { openRemoteSigner } from "../../src/host/node/remote-signer.js";
import { startSignerServer } from "../../src/host/node/signer-server.js";

const key = generatePrivateKey();
const TOKEN = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAYEE = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";

const offer = (scheme: "exact" | "upto", amount: string): PaymentRequired => ({
  x402Version: 2,
  resource: { url: "https://upstream.test/x402/web/search", description: "search", mimeType: "application/json" },
  accepts: [
    {
      scheme,
      network: "eip155:84532",
      amount,
      asset: TOKEN,
      payTo: PAYEE,
      maxTimeoutSeconds: 120,
      extra: {
        name: "USDC",
        version: "2",
        assetTransferMethod: "permit2",
        ...(scheme === "upto" ? { facilitatorAddress: "0x8F5Cb2e0a6D05e4d0c7b3e3F1D2C5a3b4c5d6e7f" } : {}),
      },
    },
  ],
});

describe("the remote signer and the Permit2 schemes", () => {
  let dir: string;
  let server: { close(): Promise<void> };
  let remote: WalletSigner;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tollgate-signer-permit2-"));
    server = await startSignerServer({
      socket: join(dir, "signer.sock"),
      stateFile: join(dir, "state.json"),
      wallet: localWalletSigner(key),
      limits: {
        chainIds: [84532],
        assets: [TOKEN.toLowerCase()],
        payees: [PAYEE.toLowerCase()],
        maxPerAuthorization: 10_000n,
        maxPerDay: 1_000_000n,
        maxLifetimeSeconds: 600,
      },
    });
    remote = await openRemoteSigner(join(dir, "signer.sock"));
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  for (const scheme of ["exact", "upto"] as const) {
    it(`signs ${scheme} over Permit2 exactly as the key itself would`, async () => {
      const asked: TypedData[] = [];
      // The gateway's side: what the scheme asks, sent to the signer process and answered by it.
      const viaRemote: WalletSigner = { ...remote, signTypedData: (d) => (asked.push(d), remote.signTypedData(d)) };
      const pr = offer(scheme, "5000");
      const s = scheme === "exact" ? exactEvm : uptoEvm;
      const signed = await s.sign(viaRemote, pr, paymentOptions(pr)[0]!, 60);
      const sig = (decodePaymentSignatureHeader(signed.header[1]).payload as { signature: string }).signature;
      expect(asked[0]!.primaryType).toBe("PermitWitnessTransferFrom");
      expect(sig).toBe(await localWalletSigner(key).signTypedData(asked[0]!));
      expect(signed.payer).toBe(privateKeyToAccount(key).address);
    });
  }

  it("refuses a Permit2 maximum above its own most per authorization: 402 signer_refused", async () => {
    const pr = offer("upto", "20000");
    await expect(uptoEvm.sign(remote, pr, paymentOptions(pr)[0]!, 60)).rejects.toMatchObject({
      status: 402,
      code: "signer_refused",
      message: expect.stringMatching(/most per authorization/),
    });
  });
});
