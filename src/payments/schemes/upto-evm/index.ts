// The "upto" scheme on EVM chains (Permit2 only): the gateway signs the option's amount as a maximum, the seller settles
// what the work came to (SettleResponse.amount), at most that. The ledger reserves the maximum (the policy reasons in
// it: amount-at-risk), settles to the settled amount and releases the rest (src/payments/payer.ts).
import { UptoEvmScheme } from "@x402/evm/upto/client";
import type { PaymentScheme } from "../types.js";
import { exactEvmVerdict } from "../exact-evm/settle.js";
import { chooseAuthorization, signWithLibrary } from "../library-sign.js";
import { isPermit2Nonce, readPermit2Authorization, transferredIn } from "../permit2.js";

const isEvm = (network: string | undefined) => !!network && network.startsWith("eip155:");

export const uptoEvm: PaymentScheme = {
  scheme: "upto",
  settlesBelowAmount: true,
  // v1 has no upto; the facilitator's address must be in the option (the payer binds it into what it signs).
  accepts: (option) =>
    option.scheme === "upto" &&
    option.x402Version >= 2 &&
    isEvm(option.network) &&
    typeof (option.raw.extra as { facilitatorAddress?: unknown } | undefined)?.facilitatorAddress === "string",
  authorization: (option, payer, maxLifetimeSeconds, nowMs) => chooseAuthorization(option, payer, maxLifetimeSeconds, nowMs, "permit2"),
  sign: (wallet, paymentRequired, option, maxLifetimeSeconds, preset) =>
    signWithLibrary(
      wallet,
      paymentRequired,
      option,
      maxLifetimeSeconds,
      (client, signer) => client.register("eip155:*", new UptoEvmScheme(signer)),
      readPermit2Authorization,
      preset,
    ),
  owns: (entry) => entry.kind === "x402" && isEvm(entry.network) && isPermit2Nonce(entry.nonce),
  verdict: exactEvmVerdict,
  settledOnChain: async (entry, transaction, rpc) => {
    const url = entry.network ? rpc[entry.network] : undefined;
    if (!url || !entry.asset || !entry.payer || !entry.payee) return undefined;
    return transferredIn(url, transaction, entry.asset, entry.payer, entry.payee);
  },
};
