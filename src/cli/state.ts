// `tollgate state migrate --config FILE`: moves a Redis Cluster's ledger from the shared layout ("{ledger}", one hash
// slot) to the tenant layout ("{t:<tenant>}"), and its resource ownership from "{own}" (one slot) to records on their
// own slots and lists under their tenant's tag, for a Redis Cluster upgraded past them (docs/state-layout.md).
// Gateways stopped. Each part is idempotent; a part whose layout config keeps "shared" is left alone.
import { parseArgs } from "node:util";
import { loadConfigFile } from "../../config/load-node.js";
import { nodeStateStores } from "../host/node/stores.js";
import { migrateLedgerToTenantLayout } from "../state/redis-migrate.js";
import { migrateOwnershipToTenantLayout } from "../state/redis-migrate-ownership.js";
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
  const ledger = config.state.ledgerLayout !== "shared";
  const ownership = config.state.ownershipLayout !== "shared";
  if (!ledger && !ownership)
    throw new Error(
      'tollgate state migrate: state.ledgerLayout and state.ownershipLayout are "shared": remove them (or set "tenant") to move them',
    );
  const stores = nodeStateStores(config) as RedisStores;
  try {
    if (ledger) {
      const r = await migrateLedgerToTenantLayout(stores.connection);
      process.stdout.write(
        r.already
          ? "The ledger is in the tenant layout already: nothing to do.\n"
          : `Moved ${r.entries} ledger entries and ${r.counters} budget counters of ${r.tenants} tenants to the tenant layout.\n`,
      );
    }
    if (ownership) {
      const o = await migrateOwnershipToTenantLayout(stores.connection);
      process.stdout.write(
        o.already
          ? "Ownership is in the tenant layout already: nothing to do.\n"
          : `Moved ${o.resources} owned resources of ${o.tenants} tenants to the tenant layout.\n`,
      );
    }
  } finally {
    await stores.close();
  }
}
