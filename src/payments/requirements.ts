// One view of an x402 payment option, whether the upstream speaks v2 (`amount`, CAIP-2) or v1 (`maxAmountRequired`).
import { EVM_NETWORK_CHAIN_ID_MAP } from "@x402/evm/v1";
import { readWire } from "../upstream/records.js";
import { type PaymentRequired, PaymentRequirements } from "./wire.js";

export interface PaymentOption {
  x402Version: number;
  scheme: string;
  /** CAIP-2, also for v1 options (mapped from their network names). */
  network: string;
  amount: bigint;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  /** The option exactly as the upstream sent it (what must be echoed back). */
  raw: PaymentRequirements;
}

function toCaip2(network: string): string {
  if (network.includes(":")) return network;
  const id = (EVM_NETWORK_CHAIN_ID_MAP as Record<string, number>)[network];
  return id ? `eip155:${id}` : `unknown:${network}`;
}

/** Reads every option of a PaymentRequired; malformed options are skipped, never guessed. */
export function paymentOptions(paymentRequired: PaymentRequired): PaymentOption[] {
  const out: PaymentOption[] = [];
  for (const a of paymentRequired.accepts) {
    if (!a || typeof a !== "object") continue;
    const r = readWire(PaymentRequirements, a);
    const amountStr = paymentRequired.x402Version === 1 ? r.maxAmountRequired : r.amount;
    if (typeof amountStr !== "string" || !/^\d+$/.test(amountStr)) continue;
    if (typeof r.network !== "string" || typeof r.asset !== "string" || typeof r.payTo !== "string") continue;
    out.push({
      x402Version: paymentRequired.x402Version,
      scheme: String(r.scheme),
      network: toCaip2(r.network),
      amount: BigInt(amountStr),
      asset: r.asset,
      payTo: r.payTo,
      maxTimeoutSeconds: Number(r.maxTimeoutSeconds ?? 60),
      raw: r,
    });
  }
  return out;
}
