// Permit2 needs the wallet's one-time ERC-20 approval of the Permit2 contract per token. The gateway never gives it by
// itself (no approval is signed silently): an operator runs `tollgate wallet approve`. Before it signs a Permit2
// payment the gateway reads the allowance (when it has an RPC for the network) and, without one, refuses by name.
import { GatewayError } from "../errors.js";
import type { PaymentOption } from "./requirements.js";
import { PERMIT2_ADDRESS, paysOverPermit2, permit2Allowance } from "./schemes/permit2.js";

/** Allowances found sufficient, by network/asset/owner: read again after this long (an approval can be revoked). */
const KNOWN_MS = 60_000;

/** The command that gives the approval, for this option and wallet. */
const approveCommand = (option: Pick<PaymentOption, "network" | "asset">) =>
  `tollgate wallet approve --network ${option.network} --asset ${option.asset}`;

/** The refusal when the wallet has not approved Permit2 for the option's token (also what an upstream's refusal maps to). */
export function permit2ApprovalRequired(option: Pick<PaymentOption, "network" | "asset">, wallet: string): GatewayError {
  return new GatewayError(
    503,
    "permit2_approval_required",
    `The upstream asks for payment over Permit2 in ${option.asset} on ${option.network}, and the gateway's wallet ${wallet} has not approved Permit2 (${PERMIT2_ADDRESS}) for that token. An operator runs \`${approveCommand(option)}\` once; nothing was paid.`,
    { network: option.network, asset: option.asset, wallet, command: approveCommand(option) },
  );
}

/**
 * Throws `permit2_approval_required` (503) when `option` is paid over Permit2 and the wallet's allowance to Permit2 is
 * below its amount. Without an RPC for the network, or when the read fails, it lets the payment go: the upstream's
 * refusal (`permit2_allowance_required`) is mapped to the same answer. `known`: the allowances this gateway found
 * sufficient lately (services.payments.permit2Approved).
 */
export async function requirePermit2Approval(
  known: Map<string, number>,
  option: PaymentOption,
  wallet: string,
  rpc: Record<string, string>,
  now: number,
): Promise<void> {
  if (!paysOverPermit2(option)) return;
  const url = rpc[option.network];
  if (!url) return;
  const key = `${option.network}|${option.asset.toLowerCase()}|${wallet.toLowerCase()}`;
  if ((known.get(key) ?? 0) > now) return;
  let allowance: bigint;
  try {
    allowance = await permit2Allowance(url, option.asset, wallet);
  } catch {
    return;
  }
  if (allowance < option.amount) throw permit2ApprovalRequired(option, wallet);
  known.set(key, now + KNOWN_MS);
  if (known.size > 1000) known.delete(known.keys().next().value!);
}
