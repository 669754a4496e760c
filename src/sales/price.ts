// What one sold call costs a buyer: a fixed price, or the upstream's cost of the call (the credit price table, by the
// minute for sessions and sandboxes) with the configured markup, never below the floor. Amounts are micro-USD inside
// (bigint, 6 decimals) and the asset's atomic units on the wire.
import type { TollgateConfig } from "../../config/schema.js";
import type { SaleAsset, SaleClass, SalePrice } from "../../config/sales-schema.js";
import { usdToAtomic } from "../payments/index.js";

/** The minutes a session or sandbox purchase buys: the class's `minutes`, else the credit table's default timeout. */
export function soldMinutes(config: TollgateConfig, price: SalePrice): number {
  return price.minutes ?? config.credits.defaultTimeoutMinutes;
}

/** The upstream's cost of one call of `cls` by the credit price table (micro-USD). */
function upstreamCost(config: TollgateConfig, cls: SaleClass, price: SalePrice): bigint {
  const p = config.credits.prices;
  switch (cls) {
    case "search":
      return usdToAtomic(p.webSearch);
    case "fetch":
      return usdToAtomic(p.webFetch);
    case "session":
      return usdToAtomic(p.sessionMinute) * BigInt(soldMinutes(config, price));
    case "sandbox":
      return usdToAtomic(p.sandboxMinute) * BigInt(soldMinutes(config, price));
    case "jobs":
      // A job's cost depends on its request (pages, steps): ./job-offer.ts prices each one with `marked`.
      return 0n;
  }
}

/** The price of one call of `cls` in micro-USD: fixed, or cost × (1 + markup), at least the floor; rounded up. */
export function priceOf(config: TollgateConfig, cls: SaleClass, price: SalePrice): bigint {
  if (price.price !== undefined) return usdToAtomic(price.price);
  return marked(upstreamCost(config, cls, price), price);
}

/** `cost` (micro-USD) × (1 + markup), rounded up, at least the floor. */
export function marked(cost: bigint, price: SalePrice): bigint {
  // markupPercent has at most two useful decimals: basis points keep the arithmetic in integers.
  const bps = BigInt(Math.round(price.markupPercent * 100));
  const withMarkup = (cost * (10_000n + bps) + 9_999n) / 10_000n;
  const floor = usdToAtomic(price.floor);
  return withMarkup > floor ? withMarkup : floor;
}

/** micro-USD in the asset's atomic units (a USD stablecoin: 1 unit = 1 USD), rounded up. */
export function inAssetUnits(microUsd: bigint, asset: SaleAsset): bigint {
  if (asset.decimals >= 6) return microUsd * 10n ** BigInt(asset.decimals - 6);
  const div = 10n ** BigInt(6 - asset.decimals);
  return (microUsd + div - 1n) / div;
}

/** Sessions and sandboxes: the price of one minute in micro-USD (a fixed price spread over its minutes), rounded up. */
export function perMinuteOf(config: TollgateConfig, cls: "session" | "sandbox", price: SalePrice): bigint {
  const minutes = BigInt(soldMinutes(config, price));
  if (price.price !== undefined) return (usdToAtomic(price.price) + minutes - 1n) / minutes;
  const rate = usdToAtomic(cls === "session" ? config.credits.prices.sessionMinute : config.credits.prices.sandboxMinute);
  const bps = BigInt(Math.round(price.markupPercent * 100));
  return (rate * (10_000n + bps) + 9_999n) / 10_000n;
}
