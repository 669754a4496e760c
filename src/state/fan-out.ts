// The fleet views (a ledger list across tenants, the reconciler's expired holds) read every tenant's shard: a few at a
// time, so a fleet of thousands of tenants does not open thousands of calls at once.

/** How many tenants' shards a fleet view reads at once. */
export const FAN_OUT = 8;

/** Runs `fn` over `items`, at most `limit` at a time; results in the items' order. */
export async function bounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** `items` grouped by `key` (a tenant, most often: then one call per tenant's shard), each group in the items' order. */
export function groupBy<T, V = T>(items: Iterable<T>, key: (item: T) => string, value?: (item: T) => V): Map<string, V[]> {
  const out = new Map<string, V[]>();
  for (const item of items) {
    const v = value ? value(item) : (item as unknown as V);
    const k = key(item);
    const group = out.get(k);
    if (group) group.push(v);
    else out.set(k, [v]);
  }
  return out;
}
