// Money in the configuration, parsed once into integer amounts: atomic units (bigint, 6 decimals, USDC's precision).
// The configuration keeps USD strings (what an operator writes and the admin API shows); the code that counts money
// reads these amounts, each parsed once: the configuration's when the gateway starts (createGateway), a tenant synced
// from the shared store or changed through the admin API (a new object) the first time its money is counted.
import type { TenantConfig, TollgateConfig } from "../../config/schema.js";
import { usdToAtomic } from "./money.js";

/** One million: a multiplier of exactly 1 in millionths, an amount of 1 USD in atomic units. */
export const ONE = 1_000_000n;

/** A tenant's money settings in atomic units. */
export interface TenantAmounts {
  /** Its budget windows; an absent window is unlimited. */
  budget: { daily?: bigint; monthly?: bigint; total?: bigint };
  /** Whether any window has a limit (a tenant without one spends without a ledger read for its remaining). */
  budgeted: boolean;
  /** Its payment policy's maxPerRequest. */
  maxPerRequest?: bigint;
  /** Its credit multiplier in millionths ("1.25" → 1_250_000n); undefined for none or exactly 1. */
  creditMultiplier?: bigint;
}

/** The gateway's own money settings in atomic units. */
export interface ConfigAmounts {
  /** payments.maxPerRequest. */
  maxPerRequest?: bigint;
  /** payments.minWalletBalance (0: the check is off). */
  minWalletBalance: bigint;
  /** alerts.rules.walletBelow. */
  walletBelow?: bigint;
  /** credits.prices, by name. */
  creditPrices: Record<keyof TollgateConfig["credits"]["prices"], bigint>;
  /** credits.usdPerCredit. */
  usdPerCredit: bigint;
  /** credits.driftAlertUsd. */
  driftAlert: bigint;
}

/** The money fields of a tenant (a whole TenantConfig, or a part of one). */
type TenantMoney = Partial<Pick<TenantConfig, "budget" | "payment" | "creditMultiplier">>;

const opt = (usd: string | undefined) => (usd ? usdToAtomic(usd) : undefined);

// A memo keyed by the tenant's record (a value, like a schema): a tenant changed through the admin API is a new object
// (its amounts parsed afresh), and one dropped from the directory takes its amounts with it. The configuration's
// amounts are parsed once per gateway and kept on its services (services.payments.amounts, ./memory.ts).
const tenants = new WeakMap<TenantMoney, TenantAmounts>();

/** A tenant's amounts, parsed the first time they are asked for (createGateway asks for the configured tenants'). */
export function tenantAmounts(tenant: TenantMoney): TenantAmounts {
  let a = tenants.get(tenant);
  if (a) return a;
  const b = tenant.budget ?? {};
  const budget = { daily: opt(b.daily), monthly: opt(b.monthly), total: opt(b.total) };
  const multiplier = opt(tenant.creditMultiplier);
  a = {
    budget,
    budgeted: budget.daily !== undefined || budget.monthly !== undefined || budget.total !== undefined,
    maxPerRequest: opt(tenant.payment?.maxPerRequest),
    creditMultiplier: multiplier === undefined || multiplier === ONE ? undefined : multiplier,
  };
  tenants.set(tenant, a);
  return a;
}

/** The gateway's amounts, parsed from its configuration (once per gateway: paymentsMemory, ./memory.ts). */
export function configAmounts(config: TollgateConfig): ConfigAmounts {
  const prices = config.credits.prices;
  return {
    maxPerRequest: opt(config.payments.maxPerRequest),
    minWalletBalance: usdToAtomic(config.payments.minWalletBalance),
    walletBelow: opt(config.alerts.rules.walletBelow),
    creditPrices: Object.fromEntries(Object.entries(prices).map(([k, v]) => [k, usdToAtomic(v)])) as ConfigAmounts["creditPrices"],
    usdPerCredit: usdToAtomic(config.credits.usdPerCredit),
    driftAlert: usdToAtomic(config.credits.driftAlertUsd),
  };
}
