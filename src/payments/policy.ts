// Payment policy: the global one narrowed by the tenant's, and the choice of the cheapest option it allows.
import type { TenantConfig, TollgateConfig } from "../../config/schema.js";
import { tenantAmounts } from "./amounts.js";
import type { PaymentsMemory } from "./memory.js";
import { atomicToUsd, minBigint } from "./money.js";
import type { PaymentOption } from "./requirements.js";
import { schemeFor } from "./schemes/index.js";

export interface EffectivePolicy {
  networks?: Set<string>;
  assets?: Set<string>;
  payees?: Set<string>;
  maxPerRequest?: bigint;
  maxAuthorizationSeconds: number;
}

const lower = (xs?: string[]) => (xs ? new Set(xs.map((x) => x.toLowerCase())) : undefined);

function intersect(a?: Set<string>, b?: Set<string>): Set<string> | undefined {
  if (!a) return b;
  if (!b) return a;
  return new Set([...a].filter((x) => b.has(x)));
}

/** Tenant settings can only narrow the global policy, never widen it (`payments.amounts`: the configuration's, parsed). */
export function effectivePolicy(
  { config, payments }: { config: TollgateConfig; payments: Pick<PaymentsMemory, "amounts"> },
  of?: TenantConfig,
): EffectivePolicy {
  const global = config.payments;
  const tenant = of?.payment;
  return {
    networks: intersect(lower(global.networks), lower(tenant?.networks)),
    assets: intersect(lower(global.assets), lower(tenant?.assets)),
    payees: intersect(lower(global.payees?.length ? global.payees : undefined), lower(tenant?.payees?.length ? tenant.payees : undefined)),
    maxPerRequest: minBigint(payments.amounts.maxPerRequest, of ? tenantAmounts(of).maxPerRequest : undefined),
    maxAuthorizationSeconds: Math.min(global.maxAuthorizationSeconds ?? 300, tenant?.maxAuthorizationSeconds ?? Infinity),
  };
}

export type Choice =
  | { ok: true; option: PaymentOption }
  | { ok: false; code: "price_above_policy"; message: string; price: string; limit: string }
  | {
      ok: false;
      code: "no_allowed_payment_option" | "no_payable_payment_option";
      message: string;
      offered: Array<{ scheme: string; network: string; asset: string; payTo: string; price: string }>;
    };

/** Filters options by scheme (one the gateway can pay), network, asset and payee, then takes the cheapest within the per-request maximum. */
export function chooseOption(options: PaymentOption[], policy: EffectivePolicy): Choice {
  const offered = options.map((o) => ({
    scheme: o.scheme,
    network: o.network,
    asset: o.asset,
    payTo: o.payTo,
    price: atomicToUsd(o.amount),
  }));
  const payable = options.filter((o) => schemeFor(o) !== undefined);
  if (!payable.length) {
    // Nothing the gateway knows how to sign (a Solana network, an unknown scheme): named, so the operator sees why.
    const named = [...new Set(options.map((o) => `${o.scheme} on ${o.network}`))].join(", ") || "no readable option";
    return {
      ok: false,
      code: "no_payable_payment_option",
      message: `The upstream only accepts payment the gateway cannot make (${named}); it pays exact (EIP-3009 or Permit2) and upto on EVM (eip155) networks. Nothing was paid.`,
      offered,
    };
  }
  const allowed = payable
    .filter((o) => !policy.networks || policy.networks.has(o.network.toLowerCase()))
    .filter((o) => !policy.assets || policy.assets.has(o.asset.toLowerCase()))
    .filter((o) => !policy.payees || policy.payees.has(o.payTo.toLowerCase()))
    .sort((a, b) => (a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0));
  if (!allowed.length) {
    return {
      ok: false,
      code: "no_allowed_payment_option",
      message: "The upstream asked for payment in a way the payment policy does not allow (network, asset, payee or scheme).",
      offered,
    };
  }
  const cheapest = allowed[0];
  if (policy.maxPerRequest !== undefined && cheapest.amount > policy.maxPerRequest) {
    const price = atomicToUsd(cheapest.amount);
    const limit = atomicToUsd(policy.maxPerRequest);
    return {
      ok: false,
      code: "price_above_policy",
      message: `The upstream asks $${price} for this request, above the $${limit} per-request limit; nothing was paid.`,
      price,
      limit,
    };
  }
  return { ok: true, option: cheapest };
}
