// `tollgate state migrate --config FILE`: moves a Redis ledger from the shared layout ("{ledger}", one hash slot) to
// the tenant layout ("{t:<tenant>}"), for a Redis Cluster upgraded past it (docs/state-layout.md). Gateways stopped.
import { parseArgs } from "node:util";
import { loadConfigFile } from "../../config/load.js";
import { nodeStateStores } from "../platform/node/stores.js";
import { migrateLedgerToTenantLayout } from "../state/redis-migrate.js";
import type { RedisStores } from "../state/redis.js";

export async function cmdState(sub: string | undefined, args: string[]): Promise<void> {
  if (sub !== "migrate") throw new Error("usage: tollgate state migrate --config FILE");
  const { values } = parseArgs({ args, options: { config: { type: "string" } } });
  if (!values.config) throw new Error("tollgate state migrate: --config FILE is required (the gateway's own config)");
  const config = await loadConfigFile(values.config);
  if (config.state.backend !== "redis" || !config.state.clusterNodes?.length)
    throw new Error(
      'tollgate state migrate: state.backend must be "redis" with state.clusterNodes (one Redis or Sentinel keeps its layout: nothing to move)',
    );
  if (config.state.ledgerLayout === "shared")
    throw new Error('tollgate state migrate: state.ledgerLayout is "shared": remove it (or set "tenant") to move the ledger');
  const stores = nodeStateStores(config) as RedisStores;
  try {
    const r = await migrateLedgerToTenantLayout(stores.connection);
    process.stdout.write(
      r.already
        ? "The ledger is in the tenant layout already: nothing to do.\n"
        : `Moved ${r.entries} ledger entries and ${r.counters} budget counters of ${r.tenants} tenants to the tenant layout.\n`,
    );
  } finally {
    await stores.close();
  }
}
