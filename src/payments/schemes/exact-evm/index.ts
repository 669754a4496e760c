// The "exact" scheme on EVM chains (CAIP-2 `eip155:*`): a USDC transferWithAuthorization for the exact amount asked.
import type { PaymentScheme } from "../types.js";
import { exactEvmVerdict } from "./settle.js";
import { authorizeExactEvm, signExactEvm } from "./sign.js";

const isEvm = (network: string | undefined) => !!network && network.startsWith("eip155:");

export const exactEvm: PaymentScheme = {
  scheme: "exact",
  accepts: (option) => option.scheme === "exact" && isEvm(option.network),
  authorization: authorizeExactEvm,
  sign: signExactEvm,
  owns: (entry) => entry.kind === "x402" && (entry.network === undefined || isEvm(entry.network)),
  verdict: exactEvmVerdict,
};
