// exact over Permit2 and upto keep the PaymentScheme contract; every v2 payment carries a fresh payment-identifier;
// offers the gateway cannot pay are named. (On chain, end to end: test/gateway/payments-schemes.test.ts.)
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { chooseOption } from "../../src/payments/policy.js";
import { paymentOptions } from "../../src/payments/requirements.js";
import { exactEvm } from "../../src/payments/schemes/exact-evm/index.js";
import { schemeFor } from "../../src/payments/schemes/index.js";
import { withPaymentIdentifier } from "../../src/payments/schemes/payment-identifier.js";
import { uptoEvm } from "../../src/payments/schemes/upto-evm/index.js";
import { localWalletSigner } from "../../src/payments/wallet-signer.js";
import type { PaymentRequired } from "../../src/payments/wire.js";
import { paymentSchemeContract } from "./scheme-contract.js";

const wallet = generatePrivateKey();
const payer = privateKeyToAccount(wallet).address;
const TOKEN = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAYEE = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const FACILITATOR = "0x8F5Cb2e0a6D05e4d0c7b3e3F1D2C5a3b4c5d6e7f"; // checksummed, as the library writes it
const resource = { url: "https://upstream.test/x402/web/search", description: "search", mimeType: "application/json" };

const permit2Required = (): PaymentRequired => ({
  x402Version: 2,
  resource,
  accepts: [
    {
      scheme: "exact",
      network: "eip155:84532",
      amount: "5000",
      asset: TOKEN,
      payTo: PAYEE,
      maxTimeoutSeconds: 300,
      extra: { name: "USDC", version: "2", assetTransferMethod: "permit2" },
    },
  ],
});

const uptoRequired = (): PaymentRequired => ({
  x402Version: 2,
  resource,
  accepts: [
    {
      scheme: "upto",
      network: "eip155:84532",
      amount: "5000",
      asset: TOKEN,
      payTo: PAYEE,
      maxTimeoutSeconds: 300,
      extra: { name: "USDC", version: "2", assetTransferMethod: "permit2", facilitatorAddress: FACILITATOR },
    },
  ],
  extensions: { "payment-identifier": { info: { required: true }, schema: { type: "object" } } },
});

const signedFor = (value: string) => {
  const { accepted } = decodePaymentSignatureHeader(value);
  return { scheme: accepted.scheme, network: accepted.network, accepted };
};

paymentSchemeContract("exact-evm over Permit2", exactEvm, () => ({
  wallet,
  payer,
  headerName: "PAYMENT-SIGNATURE",
  paymentRequired: permit2Required(),
  signedFor,
}));

paymentSchemeContract("upto-evm (Permit2)", uptoEvm, () => ({
  wallet,
  payer,
  headerName: "PAYMENT-SIGNATURE",
  paymentRequired: uptoRequired(),
  signedFor,
}));

describe("the Permit2 schemes' payloads", () => {
  it("exact over Permit2 signs a witness transfer to the exact proxy for the option's amount and payee", async () => {
    const option = paymentOptions(permit2Required())[0]!;
    expect(schemeFor(option)).toBe(exactEvm);
    const signed = await exactEvm.sign(localWalletSigner(wallet), permit2Required(), option, 60);
    const p = decodePaymentSignatureHeader(signed.header[1]).payload as { permit2Authorization: Record<string, any> };
    expect(p.permit2Authorization).toMatchObject({
      from: payer,
      spender: "0x402085c248EeA27D92E8b30b2C58ed07f9E20001",
      permitted: { token: TOKEN, amount: "5000" },
      witness: { to: PAYEE, validAfter: "0" },
    });
    expect(signed.nonce).toBe(String(p.permit2Authorization.nonce));
    expect(signed.validBefore).toBe(Number(p.permit2Authorization.deadline));
  });

  it("upto signs the amount as a maximum, bound to the seller's facilitator; an option without one is not payable", async () => {
    const option = paymentOptions(uptoRequired())[0]!;
    expect(schemeFor(option)).toBe(uptoEvm);
    expect(uptoEvm.settlesBelowAmount).toBe(true);
    const signed = await uptoEvm.sign(localWalletSigner(wallet), uptoRequired(), option, 60);
    const p = decodePaymentSignatureHeader(signed.header[1]).payload as { permit2Authorization: Record<string, any> };
    expect(p.permit2Authorization).toMatchObject({
      spender: "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002",
      permitted: { amount: "5000" },
      witness: { to: PAYEE, facilitator: FACILITATOR },
    });
    const bare = uptoRequired();
    (bare.accepts[0] as { extra: Record<string, unknown> }).extra = { assetTransferMethod: "permit2" };
    expect(schemeFor(paymentOptions(bare)[0]!)).toBeUndefined();
  });
});

describe("payment-identifier", () => {
  it("is on every v2 payment, fresh per signature, echoing the seller's declaration with the id added", async () => {
    const option = paymentOptions(uptoRequired())[0]!;
    const a = await uptoEvm.sign(localWalletSigner(wallet), uptoRequired(), option, 60);
    const b = await uptoEvm.sign(localWalletSigner(wallet), uptoRequired(), option, 60);
    expect(a.paymentId).toMatch(/^pay_[0-9a-f]{32}$/);
    expect(a.paymentId).not.toBe(b.paymentId);
    const ext = decodePaymentSignatureHeader(a.header[1]).extensions?.["payment-identifier"];
    expect(ext).toEqual({ info: { required: true, id: a.paymentId }, schema: { type: "object" } });
    // Undeclared by the seller: sent as the extension's spec writes it.
    const plain = await exactEvm.sign(localWalletSigner(wallet), permit2Required(), paymentOptions(permit2Required())[0]!, 60);
    const info = (decodePaymentSignatureHeader(plain.header[1]).extensions?.["payment-identifier"] as { info: unknown } | undefined)?.info;
    expect(info).toEqual({ required: false, id: plain.paymentId });
  });

  it("keeps other extensions and takes a given id", () => {
    const out = withPaymentIdentifier({ other: { info: 1 } }, undefined, "pay_0123456789abcdef");
    expect(out.id).toBe("pay_0123456789abcdef");
    expect(out.extensions.other).toEqual({ info: 1 });
  });
});

describe("offers the gateway cannot pay", () => {
  it("are refused as no_payable_payment_option, each named by scheme and network", () => {
    const options = paymentOptions({
      x402Version: 2,
      resource,
      accepts: [
        {
          scheme: "exact",
          network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
          amount: "5000",
          asset: "4zMM",
          payTo: "2wKu",
          maxTimeoutSeconds: 60,
        },
        { scheme: "batch-settlement", network: "eip155:8453", amount: "5000", asset: TOKEN, payTo: PAYEE, maxTimeoutSeconds: 60 },
      ],
    });
    const choice = chooseOption(options, { maxAuthorizationSeconds: 300 });
    expect(choice.ok).toBe(false);
    if (choice.ok || choice.code === "price_above_policy") return;
    expect(choice.code).toBe("no_payable_payment_option");
    expect(choice.message).toContain("exact on solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
    expect(choice.message).toContain("batch-settlement on eip155:8453");
    expect(choice.offered).toHaveLength(2);
  });
});
