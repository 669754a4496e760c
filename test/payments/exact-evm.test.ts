// exact-EVM keeps the PaymentScheme contract, for x402 v2 (PAYMENT-SIGNATURE, CAIP-2) and v1 (X-PAYMENT, network names).
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { exactEvm } from "../../src/payments/schemes/exact-evm/index.js";
import { paymentSchemeContract } from "./scheme-contract.js";

const wallet = generatePrivateKey();
const payer = privateKeyToAccount(wallet).address;
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAYEE = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";

paymentSchemeContract("exact-evm (x402 v2)", exactEvm, () => ({
  wallet,
  payer,
  headerName: "PAYMENT-SIGNATURE",
  paymentRequired: {
    x402Version: 2,
    resource: { url: "https://upstream.test/x402/web/search", description: "search", mimeType: "application/json" },
    accepts: [
      {
        scheme: "exact",
        network: "eip155:84532",
        amount: "5000",
        asset: USDC,
        payTo: PAYEE,
        maxTimeoutSeconds: 300,
        extra: { name: "USDC", version: "2" },
      },
    ],
  },
  signedFor: (value) => {
    const { accepted } = decodePaymentSignatureHeader(value);
    return { scheme: accepted.scheme, network: accepted.network, accepted };
  },
}));

paymentSchemeContract("exact-evm (x402 v1)", exactEvm, () => ({
  wallet,
  payer,
  headerName: "X-PAYMENT",
  paymentRequired: {
    x402Version: 1,
    accepts: [
      {
        scheme: "exact",
        network: "base-sepolia",
        maxAmountRequired: "5000",
        resource: "https://upstream.test/x402/web/search",
        description: "search",
        mimeType: "application/json",
        asset: USDC,
        payTo: PAYEE,
        maxTimeoutSeconds: 300,
        extra: { name: "USDC", version: "2" },
      },
    ],
  },
  // v1 payloads do not echo the option: they name the scheme and network they were signed for.
  signedFor: (value) => decodePaymentSignatureHeader(value) as unknown as { scheme: string; network: string },
}));
