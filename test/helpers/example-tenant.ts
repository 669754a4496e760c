// The tenant an operator starting from config/tollgate.example.toml runs: its first [[tenants]] block (rate limit,
// quotas, budget, payment policy, alerts), read from the file itself so the round-trip tests and the state bench
// measure what the example ships. Node only (it reads the file); the Workers tests get it from their global setup.
import { readFileSync } from "node:fs";
import { parse } from "smol-toml";

/**
 * The example's first tenant without its id and keys (the caller names its own), its payment networks replaced by
 * `networks` (the local chain's: the example names Base mainnet). Everything else as the file has it.
 */
export function exampleTenant(networks: string[]): Record<string, unknown> {
  const file = parse(readFileSync("config/tollgate.example.toml", "utf8")) as { tenants: Record<string, unknown>[] };
  const { id: _id, keys: _keys, ...tenant } = file.tenants[0]!;
  const payment = tenant.payment as Record<string, unknown> | undefined;
  return { ...tenant, ...(payment ? { payment: { ...payment, networks } } : {}) };
}
